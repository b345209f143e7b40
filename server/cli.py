"""The `imap-mcp` command: stdio (default), serve (HTTP) and demo."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

from imap_mcp.server.config import load_settings
from imap_mcp.server.http_access import load_http_settings
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
    commands.add_parser("stdio", help="serve over stdio (the default)")
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
    settings = load_or_exit(load_settings, os.environ)
    if args.command in ("webhook", "watch"):
        from imap_mcp.server.webhooks.command import run_watch, run_webhook

        if args.command == "webhook":
            run_webhook(settings, args)
        else:
            run_watch(settings)
        return
    if args.command == "serve":
        http_settings = load_or_exit(load_http_settings, os.environ)
    announce(settings)
    from imap_mcp.server.app import build_server
    from imap_mcp.server.transports import run_http, run_stdio

    if args.command == "serve":
        run_http(build_server(settings), args.host, args.port, http_settings)
    else:
        run_stdio(build_server(settings))
