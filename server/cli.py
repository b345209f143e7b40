"""The `imap-mcp` command: stdio (default), serve (HTTP) and demo."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from .config import ConfigError, load_settings
from .http_access import load_http_settings
from .logs import setup_logging

DEFAULT_HTTP_PORT = 8000
T = TypeVar("T")


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
    for sub in (serve, demo):
        sub.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
        sub.add_argument("--port", type=int, default=DEFAULT_HTTP_PORT, help="port (default 8000)")
    return parser.parse_args(argv)


def load_or_exit(loader: Callable[[Mapping[str, str]], T] = load_settings) -> T:  # type: ignore[assignment]
    try:
        return loader(os.environ)
    except ConfigError as exc:
        print(f"imap-mcp: {exc}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    setup_logging()
    if args.command == "demo":
        from .demo import run_demo

        run_demo(args.host, args.port)
        return
    settings = load_or_exit()
    from .app import build_server
    from .guard import start_lines

    for line in start_lines(settings):
        print(f"imap-mcp: {line}", file=sys.stderr)
    from .transports import run_http, run_stdio

    if args.command == "serve":
        http_settings = load_or_exit(load_http_settings)
        run_http(build_server(settings), args.host, args.port, http_settings)
    else:
        run_stdio(build_server(settings))
