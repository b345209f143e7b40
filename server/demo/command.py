"""`imap-mcp demo`: a private Dovecot with sample mail, served over HTTP."""

from __future__ import annotations

import json
import secrets
import signal
import sys

from imap_mcp.server.app import build_server
from imap_mcp.server.config import ImapSettings, Secret, Settings
from imap_mcp.server.demo.dovecot import Dovecot, DovecotError
from imap_mcp.server.demo.sample_mail import seed
from imap_mcp.server.imap.connection import close, connect
from imap_mcp.server.transports import MCP_PATH, run_http

DEMO_USER = "demo"


def demo_settings(dovecot: Dovecot, password: str) -> Settings:
    return Settings(
        imap=ImapSettings(
            host="127.0.0.1",
            port=dovecot.tls_port,
            username=DEMO_USER,
            password=Secret(password),
            tls="implicit",
            ca_file=dovecot.cert_file,
        )
    )


def connection_help(url: str) -> str:
    snippet = json.dumps({"mcpServers": {"imap-demo": {"type": "http", "url": url}}}, indent=2)
    return (
        f"imap-mcp demo: serving a sample mailbox at {url}\n"
        f"  Connect an MCP client to that URL (Streamable HTTP). A client config entry:\n{snippet}\n"
        f"  Claude Code: claude mcp add --transport http imap-demo {url}\n"
        "  Press Ctrl-C to stop; the private Dovecot and its mail are removed on exit."
    )


def run_demo(host: str, port: int) -> None:
    password = secrets.token_urlsafe(16)
    try:
        dovecot = Dovecot(users={DEMO_USER: password})
        dovecot.start()
    except DovecotError as exc:
        print(f"imap-mcp: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    try:
        settings = demo_settings(dovecot, password)
        client = connect(settings.imap)
        try:
            seed(client)
        finally:
            close(client)
        mcp = build_server(settings)
        print(connection_help(f"http://{host}:{port}{MCP_PATH}"), flush=True)
        # uvicorn re-raises SIGTERM after its graceful shutdown; exit normally so Dovecot is stopped
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        run_http(mcp, host, port)
    finally:
        dovecot.stop()
