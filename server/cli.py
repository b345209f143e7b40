"""The `imap-mcp` command: stdio (default), serve (HTTP), check, auth, demo, webhook and watch.

At server/'s top level, not in a feature's folder: it is the entry point of every command, and imports a feature
only when its command runs.

Until a command runs, only the standard library is imported: `--version` and every `--help`
answer without loading the SDK, pydantic or imapclient (a second or more on a busy machine).
Each command imports what it uses when it runs.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .accounts.loading import Accounts
    from .config import Settings

DEFAULT_HTTP_PORT = 8000
#: what every configuration error exits with (config.CONFIG_ERROR_EXIT, repeated here so --help imports nothing)
CONFIG_ERROR_EXIT = 2

ACCOUNT_SETTINGS = (
    "The mailbox: IMAP_HOST, IMAP_PORT, IMAP_USERNAME, IMAP_PASSWORD (or IMAP_AUTH=oauth2 with IMAP_OAUTH_*), "
    "IMAP_TLS, IMAP_CA_FILE, IMAP_TIMEOUT; or IMAP_MCP_ACCOUNTS_FILE for several accounts."
)
SENDING_SETTINGS = (
    "Sending: SMTP_HOST (unset: no sending tools), SMTP_PORT, SMTP_TLS, SMTP_USERNAME, SMTP_PASSWORD, SMTP_AUTH, "
    "SMTP_FROM, SMTP_CA_FILE, SMTP_TIMEOUT; the send policy: IMAP_MCP_SEND_ALLOW, IMAP_MCP_SEND_MAX_RECIPIENTS, "
    "IMAP_MCP_SEND_CONFIRM_NEW."
)
SERVING_SETTINGS = (
    "Serving: ELICITATION, IMAP_MCP_DIALOG_TIMEZONE (the dialogs' times), IMAP_MCP_SEAL_KEYS, IMAP_DOWNLOAD_DIR, "
    "IMAP_MCP_READ_ONLY, IMAP_MCP_TOOLS, IMAP_MCP_DISABLE_TOOLS; the store of approvals and webhooks: IMAP_MCP_STORE "
    "(default under XDG_STATE_HOME), IMAP_MCP_STORE_KEYS, IMAP_MCP_WEBHOOKS."
)
HTTP_SETTINGS = (
    "Over HTTP: IMAP_MCP_AUTH_TOKENS, IMAP_MCP_ALLOW_UNAUTHENTICATED, IMAP_MCP_ALLOWED_HOSTS, IMAP_MCP_LEGACY_HTTP, "
    "IMAP_MCP_MAX_CONNECTIONS, IMAP_MCP_MAX_BUILT_ACCOUNTS."
)
STORE_SETTINGS = (
    "The webhook is kept in the store, IMAP_MCP_STORE (default: a SQLite file under XDG_STATE_HOME), under the "
    "account's IMAP_USERNAME, IMAP_HOST and IMAP_PORT; its URL, auth header and signing secret are encrypted "
    "with IMAP_MCP_STORE_KEYS, which every server replica and watcher needs too."
)
OUTBOX_SETTINGS = (
    "IMAP_MCP_WEBHOOKS=false keeps it off; the outbox: IMAP_MCP_WEBHOOK_RETENTION, IMAP_MCP_WEBHOOK_MAX_EVENTS "
    "(and their _CEILING), IMAP_MCP_WEBHOOK_RETRY_INTERVAL."
)
CONFIG_ERRORS = (
    "Settings come from environment variables (see docs/configuration.md). Every missing or invalid "
    f"setting is one line on stderr, all of them at once, and the exit code is {CONFIG_ERROR_EXIT}."
)
CHECK_FIRST = "Try the settings with `imap-mcp check` first."
#: where each command's documentation is. mkdocs.yml names no site_url (the site is not published at an address
#: of its own), so the address is the page's path in the repository, which `scripts/dev docs` serves as a site
DOCS_BASE = "docs/"
COMMAND_DOCS = {
    "": "index.md",
    "stdio": "configuration.md",
    "serve": "deploying.md",
    "check": "install.md#installing-no-checkout-needed-to-run",
    "auth": "configuration.md#signing-in-with-oauth-20-gmail-microsoft-365",
    "demo": "install.md#quick-start-fresh-debianubuntu-machine",
    "webhook": "webhooks.md",
    "webhook set": "webhooks.md",
    "webhook show": "webhooks.md",
    "webhook clear": "webhooks.md",
    "watch": "deploying.md#many-mailboxes-watchers-that-share-accounts-that-change-without-a-restart",
}


DOCS_INTRO = "Documentation, in the imap-mcp repository (`scripts/dev docs` serves it as a site):"


def docs_line(command: str) -> str:
    """The end of `command`'s help: the address of its documentation, on a line of its own."""
    return f"{DOCS_INTRO}\n{DOCS_BASE}{COMMAND_DOCS[command]}"


class HelpFormatter(argparse.HelpFormatter):
    """Paragraphs kept apart; an option's default shown only when it has one (never `(default: None)`)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n\n".join(self._fill_paragraph(part, width, indent) for part in text.split("\n\n"))

    def _fill_paragraph(self, text: str, width: int, indent: str) -> str:
        if text.startswith(DOCS_INTRO):  # an address is never broken at a hyphen
            return "\n".join(indent + line for line in text.splitlines())
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        shown = action.default not in (None, False, argparse.SUPPRESS) and action.option_strings
        return f"{help_text} (default: %(default)s)" if shown and "%(default)" not in help_text else help_text


class VersionAction(argparse.Action):
    """`--version`: the installed package's version, looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(f"imap-mcp {package_version()}")
        parser.exit()


def package_version() -> str:
    from importlib.metadata import version

    return version("imap-mcp")


def paragraphs(*texts: str) -> str:
    return "\n\n".join(texts)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="imap-mcp",
        description=paragraphs(
            "An MCP server for an IMAP mailbox: over stdio (the default), or Streamable HTTP with `serve`.",
            ACCOUNT_SETTINGS,
            CONFIG_ERRORS,
            CHECK_FIRST,
        ),
        epilog=docs_line(""),
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action=VersionAction)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def command(name: str, help_text: str, *description: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = commands.add_parser(
            name,
            help=help_text,
            description=paragraphs(*description),
            epilog=docs_line(name),
            formatter_class=HelpFormatter,
        )
        return sub

    stdio = command(
        "stdio",
        "serve over stdio (the default)",
        "Serve MCP over stdin/stdout, for a desktop client that starts imap-mcp itself. It logs in once at start, "
        "in the background: a login that fails is one line on stderr (never the password).",
        ACCOUNT_SETTINGS,
        SENDING_SETTINGS,
        SERVING_SETTINGS,
        CONFIG_ERRORS,
        CHECK_FIRST,
    )
    serve = command(
        "serve",
        "serve Streamable HTTP at /mcp",
        "Serve MCP (Streamable HTTP) at http://HOST:PORT/mcp. A non-loopback --host needs IMAP_MCP_AUTH_TOKENS (or "
        "IMAP_MCP_ALLOW_UNAUTHENTICATED=true behind an authenticating gateway).",
        ACCOUNT_SETTINGS,
        SENDING_SETTINGS,
        SERVING_SETTINGS,
        HTTP_SETTINGS,
        CONFIG_ERRORS,
        CHECK_FIRST,
    )
    check = command(
        "check",
        "try the configuration for real and say what works",
        "Connect to the IMAP server (and the SMTP server when SMTP_HOST is set) as configured and print one line "
        "per step; exit 0 when imap-mcp can do its job, 1 otherwise.",
        ACCOUNT_SETTINGS,
        SENDING_SETTINGS,
        CONFIG_ERRORS,
    )
    auth = command(
        "auth",
        "sign in with OAuth 2.0 once and save the refresh token (IMAP_AUTH=oauth2)",
        "Sign in with OAuth 2.0 once (device code, or a browser on this machine) and save the refresh token for "
        "IMAP_AUTH=oauth2. Then run `imap-mcp check`.",
        "It reads IMAP_OAUTH_CLIENT_ID, IMAP_OAUTH_CLIENT_SECRET, IMAP_OAUTH_CLIENT_AUTH, IMAP_OAUTH_SCOPE, "
        "IMAP_OAUTH_TENANT (microsoft), IMAP_OAUTH_DEVICE_URL and IMAP_OAUTH_AUTH_URL (another provider), "
        "IMAP_OAUTH_TOKEN_FILE and IMAP_TIMEOUT.",
    )
    auth.add_argument("provider", metavar="google|microsoft|TOKEN_URL", help="the provider, or its token endpoint")
    auth.add_argument(
        "--flow",
        choices=("device", "browser"),
        help="device code, or a browser on this machine (default: the provider's)",
    )
    auth.add_argument(
        "--token-file",
        metavar="PATH",
        help="where to save it (default: IMAP_OAUTH_TOKEN_FILE, else ~/.config/imap-mcp)",
    )
    demo = command(
        "demo",
        "start a private Dovecot with sample mail and serve it over HTTP",
        "Start a private Dovecot with sample mail and a local SMTP sink, serve them over HTTP and print client "
        "entries for HTTP and stdio. Needs dovecot (Debian package dovecot-imapd). It reads no IMAP_* or SMTP_* "
        "setting: the entries it prints hold the demo's own.",
    )
    for sub in (serve, demo):
        sub.add_argument("--host", default="127.0.0.1", help="address to listen on")
        sub.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT, help="port to listen on")
    for sub in (stdio, check):
        sub.add_argument("--account", metavar="NAME", help="the account of IMAP_MCP_ACCOUNTS_FILE")
    check.add_argument(
        "--write-test",
        action="store_true",
        help="also prove what the server announced in two scratch mailboxes it creates and removes (APPEND, STORE, "
        "COPY, MOVE, UID EXPUNGE); nothing else is touched",
    )
    add_webhook_commands(command)
    return parser


def add_webhook_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    """`webhook set|show|clear` (the operator's side of the new-mail webhook) and `watch`."""
    webhook = command(
        "webhook",
        "set, show or clear the account's new-mail webhook (operator only)",
        "The operator's side of the account's new-mail webhook, which no tool can set or show: `set` saves the URL "
        "(and an auth header) and prints the signing secret once, `show` prints what get_webhook_status shows, "
        "`clear` removes the webhook and its outbox. Events are delivered only while `imap-mcp watch` runs.",
        STORE_SETTINGS,
    )
    actions = webhook.add_subparsers(dest="webhook_action", metavar="ACTION", required=True)

    def action(name: str, help_text: str, *description: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = actions.add_parser(
            name,
            help=help_text,
            description=paragraphs(*description),
            epilog=docs_line(f"webhook {name}"),
            formatter_class=HelpFormatter,
        )
        sub.add_argument("--account", metavar="NAME", help="the account of IMAP_MCP_ACCOUNTS_FILE whose webhook it is")
        return sub

    setting = action(
        "set",
        "save and turn on the webhook; prints the signing secret once",
        "Save the webhook's URL (and auth header) with a new signing secret, turn delivery on, print the secret once "
        "and the next steps: `imap-mcp watch` must run for events to be delivered.",
        STORE_SETTINGS + " IMAP_MCP_STORE_KEYS must be set: without it nothing can be saved.",
    )
    setting.add_argument(
        "--url", required=True, help="where events are POSTed (https://…; plain http:// only to a loopback host)"
    )
    setting.add_argument(
        "--auth-header", metavar="'NAME: VALUE'", help="a header sent with every event, e.g. 'Authorization: Bearer …'"
    )
    action(
        "show",
        "what get_webhook_status shows (never the URL or secrets)",
        "Print the webhook's status as get_webhook_status shows it: its state, whether a watcher is running and "
        "when it last heard from the mailbox, the delivery counters and the outbox limits; never the URL, the auth "
        "header or the secret.",
        STORE_SETTINGS,
        OUTBOX_SETTINGS,
    )
    action(
        "clear",
        "remove the webhook and its outbox",
        "Remove the webhook, its outbox and where the watcher had got to.",
        STORE_SETTINGS,
    )
    watch = command(
        "watch",
        "watch INBOX and deliver new-mail events (any number share the accounts)",
        "Watch the INBOX of every account with a webhook (of IMAP_MCP_ACCOUNTS_FILE, or the environment's one) and "
        "deliver each new message as a signed event to the webhook saved with `imap-mcp webhook set`, until SIGTERM "
        "or Ctrl-C. Any number may run on the same store: they share the accounts, each about its share, by a lease "
        "per account; when one joins or leaves they rebalance, and a dead one's accounts are taken over once its "
        "leases run out. The accounts file is re-read on SIGHUP and whenever it changes.",
        ACCOUNT_SETTINGS,
        STORE_SETTINGS,
        OUTBOX_SETTINGS,
        CONFIG_ERRORS,
    )
    watch.add_argument(
        "--account",
        metavar="NAME",
        help="watch only this account of IMAP_MCP_ACCOUNTS_FILE (taken whenever it is free, never shared out)",
    )
    watch.add_argument(
        "--max-accounts", type=positive_int, metavar="N", help="hold at most N accounts (default: no bound)"
    )
    watch.add_argument(
        "--lease-seconds",
        type=positive_float,
        default=15.0,
        metavar="S",
        help="how long a lease lasts unrenewed: a dead watcher's accounts are taken over after this; renewed every "
        "S/3 seconds (the same on every watcher of a store)",
    )


def positive_int(text: str) -> int:
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 1.0 <= value <= 3600.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 1 to 3600")
    return value


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    from .logs import setup_logging

    setup_logging()
    if args.command == "demo":
        from .demo.command import run_demo

        run_demo(args.host, args.port)
        return
    if args.command == "auth":
        from .oauth.command import run_auth

        run_auth(args.provider, args.flow, args.token_file)
        return
    if args.command == "serve":
        serve(args.host, args.port)
        return
    from .accounts.loading import load_accounts, stdio_account
    from .serving.startup import load_or_exit

    accounts = load_or_exit(load_accounts, os.environ)
    if args.command in ("check", "webhook", "watch"):  # serving prints them with its start lines (`announce`)
        for warning in accounts.warnings:
            print(f"imap-mcp: {warning}", file=sys.stderr)
    if args.command == "watch":
        from .webhooks.command import run_watch

        run_watch(accounts, os.environ, args.account, args.max_accounts, args.lease_seconds)
        return
    chosen = load_or_exit(lambda _env: stdio_account(accounts, getattr(args, "account", None)), os.environ)
    if args.command == "check":
        run_check_command(chosen.settings, args.write_test)
    elif args.command == "webhook":
        from .webhooks.command import run_webhook

        run_webhook(chosen.settings, args)
    else:
        from .imap.pool import ImapPool
        from .serving.accounts import account_server
        from .serving.startup import announce, check_login_in_background
        from .serving.transports import run_stdio

        announce(accounts, http=False)
        pool = ImapPool(chosen.settings.imap)
        check_login_in_background(pool)
        run_stdio(account_server(chosen, pool))


def run_check_command(settings: Settings, write_test: bool = False) -> None:
    from .check import degraded, ready, run_check

    steps = run_check(settings, write_test)
    for step in steps:
        print(step.line, flush=True)
    if ready(steps) and (failing := degraded(steps)):
        print(
            f"imap-mcp check: degraded — imap-mcp can serve this mailbox, but the write test found that these fail "
            f"here though the server announced what they need: {', '.join(failing)} (their lines above say why)."
        )
        return
    if ready(steps):
        print("imap-mcp check: ready — imap-mcp can serve this mailbox.")
        return
    print("imap-mcp check: not ready — fix the setting named in the fail line above.")
    raise SystemExit(1)


def serve(host: str, port: int) -> None:
    """Serve HTTP; off loopback only with bearer tokens (the accounts file's, IMAP_MCP_AUTH_TOKENS) or the opt-out.

    The accounts and the HTTP settings are read together, so that one run names every problem of both.
    """
    from .accounts.loading import ACCOUNTS_FILE_VARIABLE, load_accounts
    from .serving.accounts import accounts_http_app
    from .serving.http_access import load_http_settings, require_authentication_off_loopback
    from .serving.startup import announce, load_or_exit
    from .serving.transports import listen_or_exit, serve_app
    from .setting_values import Problems

    def load(env: Mapping[str, str]) -> Accounts:
        problems = Problems()
        accounts = problems.read(None, load_accounts, env)
        if not env.get(ACCOUNTS_FILE_VARIABLE, "").strip():  # with a file every caller needs an account's token
            http_settings = problems.read(None, load_http_settings, env)
            if http_settings is not None:
                problems.read(None, require_authentication_off_loopback, host, http_settings)
        problems.raise_any()
        assert accounts is not None  # no problem, so loaded
        return accounts

    accounts = load_or_exit(load, os.environ)
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
