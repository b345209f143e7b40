"""`imap-mcp demo`: a private Dovecot with sample mail and a local SMTP sink, served over HTTP.

It prints two client entries: HTTP (this process) and stdio (a command and environment that
start another imap-mcp against the same private Dovecot and SMTP sink, while the demo runs).
"""

from __future__ import annotations

import contextlib
import json
import secrets
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from functools import partial
from pathlib import Path

from ..config import ImapSettings, Settings, SmtpSettings
from ..imap.connection import close, connect
from ..serving.app import build_server
from ..serving.transports import listen_or_exit, mcp_url, run_http
from ..setting_values import Secret
from ..webhooks.settings import WebhookSettings
from .dovecot import Dovecot, DovecotError
from .sample_mail import OWNER, seed
from .smtp_sink import HOST as SINK_HOST
from .smtp_sink import SmtpSink

DEMO_USER = "demo"
SENDER = f"Demo <{OWNER}>"


def demo_imap(dovecot: Dovecot, password: str) -> ImapSettings:
    return ImapSettings(
        host="127.0.0.1",
        port=dovecot.tls_port,
        username=DEMO_USER,
        password=Secret(password),
        tls="implicit",
        ca_file=dovecot.cert_file,
    )


@contextlib.contextmanager
def demo_folder() -> Iterator[Path]:
    """The demo's own folder, for its Dovecot and its store, removed with all it holds when the demo ends (Ctrl-C
    included): nothing of the demo is left behind, and nothing of it goes into the user's own store."""
    folder = Path(tempfile.mkdtemp(prefix="imap-mcp-demo."))
    folder.chmod(0o755)  # Dovecot's login and mail processes run as other users and look inside
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def demo_store_url(folder: Path) -> str:
    """The demo's store (the approval ledger), in a folder of `folder` that only this user can enter."""
    state = folder / "state"
    state.mkdir(mode=0o700, exist_ok=True)
    return f"sqlite:///{state / 'store.sqlite3'}"


def demo_settings(imap: ImapSettings, smtp_port: int, store_url: str) -> Settings:
    """The demo account, sending through the SMTP sink on `smtp_port`, its store at `store_url`."""
    smtp = SmtpSettings(
        host=SINK_HOST, port=smtp_port, username=DEMO_USER, password=imap.password, sender=SENDER, tls="none"
    )
    return Settings(imap=imap, smtp=smtp, webhooks=WebhookSettings(store_url=store_url))


def settings_env(settings: Settings) -> dict[str, str]:
    """The environment that gives another imap-mcp process these settings."""
    imap = settings.imap
    env = {
        "IMAP_HOST": imap.host,
        "IMAP_PORT": str(imap.port),
        "IMAP_USERNAME": imap.username,
        "IMAP_PASSWORD": imap.password.reveal(),
        "IMAP_TLS": imap.tls,
        "IMAP_MCP_STORE": settings.webhooks.store_url,
    }
    if imap.ca_file:
        env["IMAP_CA_FILE"] = str(imap.ca_file)
    if settings.smtp:
        env.update(
            SMTP_HOST=settings.smtp.host,
            SMTP_PORT=str(settings.smtp.port),
            SMTP_TLS=settings.smtp.tls,
            SMTP_FROM=settings.smtp.sender,
        )
    return env


def installed_command() -> list[str]:
    """How to start this imap-mcp: the `imap-mcp` script beside this Python, else `python -m imap_mcp.server`."""
    script = Path(sys.executable).parent / "imap-mcp"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "imap_mcp.server"]


def connection_help(url: str, settings: Settings, folder: Path) -> str:
    http_entry = json.dumps({"mcpServers": {"imap-demo": {"type": "http", "url": url}}}, indent=2)
    command, *args = installed_command()
    stdio = {"command": command, "args": [*args, "stdio"], "env": settings_env(settings)}
    stdio_entry = json.dumps({"mcpServers": {"imap-demo-stdio": stdio}}, indent=2)
    sink = f"{settings.smtp.host}:{settings.smtp.port}" if settings.smtp else "none"
    return (
        f"imap-mcp demo: serving a sample mailbox at {url}\n"
        f"  Connect an MCP client to that URL (Streamable HTTP). A client config entry:\n{http_entry}\n"
        f"  Claude Code: claude mcp add --transport http imap-demo {url}\n"
        "  Or let the client start imap-mcp itself (stdio) against this demo's mailbox, while the demo runs:\n"
        f"{stdio_entry}\n"
        f"  Sending works: mail goes to a local SMTP sink ({sink}) that delivers it into this demo's INBOX, "
        "and imap-mcp files its copy in Sent. Nothing leaves this machine.\n"
        f"  The demo keeps everything in {folder}: the private Dovecot, its mail, and the store of approvals "
        "(not your own store).\n"
        "  Press Ctrl-C to stop; that folder and all it holds are removed on exit."
    )


def deliver_to_inbox(imap: ImapSettings, raw: bytes) -> None:
    client = connect(imap)
    try:
        client.append("INBOX", raw)
    finally:
        close(client)


@contextlib.contextmanager
def demo_mailbox(folder: Path, password: str) -> Iterator[Settings]:
    """While in the block: the demo's private Dovecot (in `folder`) with the sample mail, and the SMTP sink that
    delivers into its INBOX; their settings, with the store in `folder`. `DovecotError` when Dovecot cannot run."""
    dovecot = Dovecot(users={DEMO_USER: password}, base=folder)
    dovecot.start()
    try:
        imap = demo_imap(dovecot, password)
        client = connect(imap)
        try:
            seed(client)
        finally:
            close(client)
        with SmtpSink(partial(deliver_to_inbox, imap)) as sink:
            yield demo_settings(imap, sink.port, demo_store_url(folder))
    finally:
        dovecot.stop()


def run_demo(host: str, port: int) -> None:
    sock = listen_or_exit(host, port)
    try:
        with demo_folder() as folder, demo_mailbox(folder, secrets.token_urlsafe(16)) as settings:
            mcp = build_server(settings)
            print(connection_help(mcp_url(host, port), settings, folder), flush=True)
            # uvicorn re-raises SIGINT (Ctrl-C) and SIGTERM after its graceful shutdown: exit normally instead,
            # so that Dovecot is stopped and the demo's folder removed without a traceback
            for stop in (signal.SIGINT, signal.SIGTERM):
                signal.signal(stop, lambda *_: sys.exit(0))
            run_http(mcp, sock)
    except DovecotError as exc:
        print(f"imap-mcp: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
