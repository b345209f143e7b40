"""The `imap-mcp` command: stdio (default), serve (HTTP), check and demo."""

from __future__ import annotations

import argparse
import functools
import os
import sys
import threading
from collections.abc import Sequence

from .accounts.loading import Accounts, load_accounts
from .config import Settings
from .logs import setup_logging
from .startup import announce, load_or_exit

DEFAULT_HTTP_PORT = 8000
SETTINGS_HELP = (
    "Configuration comes from environment variables (IMAP_HOST, IMAP_PORT, IMAP_USERNAME, IMAP_PASSWORD, "
    "IMAP_TLS, IMAP_CA_FILE, SMTP_*, IMAP_MCP_*; see the README). Run `imap-mcp check` first."
)
Formatter = argparse.ArgumentDefaultsHelpFormatter


def package_version() -> str:
    from importlib.metadata import version

    return version("imap-mcp")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="imap-mcp", description=f"An MCP server for one IMAP mailbox. {SETTINGS_HELP}", formatter_class=Formatter
    )
    parser.add_argument("--version", action="version", version=f"imap-mcp {package_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    stdio = commands.add_parser(
        "stdio",
        help="serve over stdio (the default)",
        description="Serve MCP over stdin/stdout, for a desktop client that starts imap-mcp itself. " + SETTINGS_HELP,
        formatter_class=Formatter,
    )
    serve = commands.add_parser(
        "serve",
        help="serve Streamable HTTP at /mcp",
        description="Serve MCP (Streamable HTTP) at http://HOST:PORT/mcp. A non-loopback --host needs "
        "IMAP_MCP_AUTH_TOKENS (or IMAP_MCP_ALLOW_UNAUTHENTICATED=true behind an authenticating gateway). "
        + SETTINGS_HELP,
        formatter_class=Formatter,
    )
    check = commands.add_parser(
        "check",
        help="try the configuration for real and say what works",
        description="Connect to the IMAP server (and the SMTP server when SMTP_HOST is set) as configured and "
        "print one line per step; exit 0 when imap-mcp can do its job, 1 otherwise. " + SETTINGS_HELP,
        formatter_class=Formatter,
    )
    demo = commands.add_parser(
        "demo",
        help="start a private Dovecot with sample mail and serve it over HTTP",
        description="Start a private Dovecot with sample mail and a local SMTP sink, serve them over HTTP and "
        "print client entries for HTTP and stdio. Needs dovecot (Debian package dovecot-imapd).",
        formatter_class=Formatter,
    )
    for sub in (stdio, check):
        sub.add_argument("--account", metavar="NAME", help="the account of IMAP_MCP_ACCOUNTS_FILE")
    check.add_argument(
        "--write-test",
        action="store_true",
        help="also prove what the server announced in two scratch mailboxes it creates and removes (APPEND, STORE, "
        "COPY, MOVE, UID EXPUNGE); nothing else is touched",
    )
    auth = commands.add_parser(
        "auth",
        help="sign in with OAuth 2.0 once and save the refresh token (IMAP_AUTH=oauth2; see README)",
        description="Sign in with OAuth 2.0 once (device code, or a browser on this machine) and save the refresh "
        "token for IMAP_AUTH=oauth2. " + SETTINGS_HELP,
        formatter_class=Formatter,
    )
    auth.add_argument("provider", metavar="google|microsoft|TOKEN_URL", help="the provider, or its token endpoint")
    auth.add_argument("--flow", choices=("device", "browser"), help="device code, or a browser on this machine")
    auth.add_argument("--token-file", help="where to save it (default IMAP_OAUTH_TOKEN_FILE, else ~/.config/imap-mcp)")
    from .webhooks.command import add_webhook_commands

    add_webhook_commands(commands)
    for sub in (serve, demo):
        sub.add_argument("--host", default="127.0.0.1", help="address to listen on")
        sub.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT, help="port to listen on")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging()
    if args.command == "demo":
        from .demo.command import run_demo

        run_demo(args.host, args.port)
        return
    if args.command == "auth":
        from .oauth.command import run_auth

        run_auth(args.provider, args.flow, args.token_file)
        return
    accounts = load_or_exit(load_accounts, os.environ)
    if args.command in ("webhook", "watch", "check"):
        from .accounts.serving import stdio_account

        chosen = load_or_exit(lambda _env: stdio_account(accounts, args.account), os.environ)
        if args.command == "check":
            run_check_command(chosen.settings, args.write_test)
            return
        from .webhooks.command import run_watch, run_webhook

        if args.command == "webhook":
            run_webhook(chosen.settings, args)
        else:
            run_watch(chosen.settings)
    elif args.command == "serve":
        serve(accounts, args.host, args.port)
    else:
        from .accounts.serving import account_server, stdio_account
        from .transports import run_stdio

        account = load_or_exit(lambda _env: stdio_account(accounts, getattr(args, "account", None)), os.environ)
        announce(accounts, http=False)
        run_stdio(account_server(account))


def run_check_command(settings: Settings, write_test: bool = False) -> None:
    from .check import ready, run_check

    steps = run_check(settings, write_test)
    for step in steps:
        print(step.line, flush=True)
    if ready(steps):
        print("imap-mcp check: ready — imap-mcp can serve this mailbox.")
        return
    print("imap-mcp check: not ready — fix the setting named in the fail line above.")
    raise SystemExit(1)


def serve(accounts: Accounts, host: str, port: int) -> None:
    """Serve HTTP; off loopback only with bearer tokens (the accounts file's, IMAP_MCP_AUTH_TOKENS) or the opt-out."""
    from .accounts.serving import accounts_http_app
    from .http_access import load_http_settings, require_authentication_off_loopback
    from .transports import listen_or_exit, serve_app

    if accounts.source is None:  # with an accounts file every caller needs one of its accounts' tokens
        http_settings = load_or_exit(load_http_settings, os.environ)
        load_or_exit(lambda _: require_authentication_off_loopback(host, http_settings), os.environ)
    app = load_or_exit(functools.partial(accounts_http_app, accounts), os.environ)
    sock = listen_or_exit(host, port)
    announce(accounts, http=True)
    if accounts.source is None:  # an accounts file's accounts are checked one by one: `check --account NAME`
        report_check_in_background(accounts.accounts[0].settings)
    serve_app(app, sock)


def report_check_in_background(settings: Settings) -> None:
    """The check's one-line summary on stderr, when it is done: an IMAP server that is down never delays serving."""
    from .check import run_check, summary

    def report() -> None:
        print(f"imap-mcp: {summary(settings, run_check(settings))}", file=sys.stderr, flush=True)

    threading.Thread(target=report, name="imap-mcp-check", daemon=True).start()
