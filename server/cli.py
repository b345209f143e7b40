"""The `imap-mcp` command: stdio (default), serve (HTTP) and demo."""

from __future__ import annotations

import argparse
import functools
import os
from collections.abc import Sequence

from imap_mcp.server.accounts.loading import load_accounts
from imap_mcp.server.logs import setup_logging
from imap_mcp.server.startup import announce, load_or_exit

DEFAULT_HTTP_PORT = 8000


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="imap-mcp",
        description="An MCP server for one IMAP mailbox. Configuration comes from environment variables "
        "(IMAP_HOST, IMAP_PORT, IMAP_USERNAME, IMAP_PASSWORD, IMAP_TLS, IMAP_CA_FILE, ...; see README).",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    stdio = commands.add_parser("stdio", help="serve over stdio (the default)")
    stdio.add_argument("--account", metavar="NAME", help="the account of IMAP_MCP_ACCOUNTS_FILE to serve")
    serve = commands.add_parser("serve", help="serve Streamable HTTP at /mcp")
    demo = commands.add_parser("demo", help="start a private Dovecot with sample mail and serve it over HTTP")
    auth = commands.add_parser(
        "auth", help="sign in with OAuth 2.0 once and save the refresh token (IMAP_AUTH=oauth2; see README)"
    )
    auth.add_argument("provider", metavar="google|microsoft|TOKEN_URL", help="the provider, or its token endpoint")
    auth.add_argument("--flow", choices=("device", "browser"), help="device code, or a browser on this machine")
    auth.add_argument("--token-file", help="where to save it (default IMAP_OAUTH_TOKEN_FILE, else ~/.config/imap-mcp)")
    from imap_mcp.server.webhooks.command import add_webhook_commands

    add_webhook_commands(commands)
    for sub in (serve, demo):
        sub.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        sub.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT, help="port (default 8000)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging()
    if args.command == "demo":
        from imap_mcp.server.demo.command import run_demo

        run_demo(args.host, args.port)
        return
    if args.command == "auth":
        from imap_mcp.server.oauth.command import run_auth

        run_auth(args.provider, args.flow, args.token_file)
        return
    accounts = load_or_exit(load_accounts, os.environ)
    if args.command in ("webhook", "watch"):
        from imap_mcp.server.accounts.serving import stdio_account
        from imap_mcp.server.webhooks.command import run_watch, run_webhook

        chosen = load_or_exit(lambda _env: stdio_account(accounts, args.account), os.environ)
        if args.command == "webhook":
            run_webhook(chosen.settings, args)
        else:
            run_watch(chosen.settings)
        return
    from imap_mcp.server.accounts.serving import account_server, accounts_http_app, stdio_account
    from imap_mcp.server.transports import run_stdio, serve_app

    if args.command == "serve":
        app = load_or_exit(functools.partial(accounts_http_app, accounts), os.environ)
        announce(accounts)
        serve_app(app, args.host, args.port)
    else:
        account = load_or_exit(lambda _env: stdio_account(accounts, getattr(args, "account", None)), os.environ)
        announce(accounts)
        run_stdio(account_server(account))
