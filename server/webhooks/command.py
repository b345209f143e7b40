"""The operator side: `imap-mcp webhook set/show/clear` (the reference's account page) and `imap-mcp watch`.

Their arguments and help are `cli`'s, which builds every command's parser without importing this module.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time
import uuid
from typing import NoReturn

from ..config import Settings
from ..errors import ImapMcpError
from ..logs import get_logger
from ..store.database import Store
from .cipher import StoreCipher
from .delivery import deliver_one
from .leases import LEASE_SECONDS, hold_lease, release_lease
from .operations import WebhookAccount, webhook_store
from .outbox import drop_queued_while_off, seal_plain_events
from .rows import (
    clear_endpoint,
    invalid_url_reason,
    load_row,
    parse_auth_header,
    save_endpoint,
)
from .status import read_status
from .watcher import InboxWatcher

#: how often an idle pump looks for due events (retries, or events another process added)
PUMP_POLL = 1.0


def _fail(message: str) -> NoReturn:
    print(f"imap-mcp: {message}", file=sys.stderr)
    raise SystemExit(2)


def _store(settings: Settings) -> Store:
    keys = tuple(key.reveal() for key in settings.webhooks.store_keys)
    return webhook_store(settings.webhooks.store_url, settings.imap.account, settings.imap.legacy_account, keys)


def run_webhook(settings: Settings, args: argparse.Namespace) -> None:
    try:
        store = _store(settings)
        account = settings.imap.account
        if args.webhook_action == "set":
            _set(store, settings, args.url, args.auth_header, args.account)
        elif args.webhook_action == "clear":
            with store.transaction() as tx:
                cleared = clear_endpoint(tx, account)
            print(f"Webhook of {account} cleared." if cleared else f"No webhook was saved for {account}.")
        else:
            print(WebhookAccount(store, settings.webhooks, account).status().model_dump_json(indent=2))
    except ImapMcpError as exc:
        _fail(str(exc))


def _set(store: Store, settings: Settings, url: str, auth_header: str | None, account_name: str | None) -> None:
    reason = invalid_url_reason(url)
    if reason is not None:
        _fail(f"--url is not valid: {reason}; give the receiver's full https:// URL.")
    header = None
    if auth_header is not None:
        try:
            header = parse_auth_header(auth_header)
        except ValueError as exc:
            _fail(str(exc))
    cipher = StoreCipher([key.reveal() for key in settings.webhooks.store_keys])
    if not cipher.can_encrypt:
        _fail(
            "IMAP_MCP_STORE_KEYS is not set: the URL, auth header and signing secret are stored encrypted; set it "
            "to one or more random keys of at least 32 characters (e.g. from: openssl rand -base64 32)."
        )
    account = settings.imap.account
    with store.transaction() as tx:
        tx.lock_account(account)
        saved = load_row(tx, account)
        # turning it on here skips the events queued while it was off, as set_webhook_enabled does
        dropped = drop_queued_while_off(tx, saved) if saved is not None and not saved.enabled else 0
        secret = save_endpoint(tx, cipher, account, url, header)
        seal_plain_events(tx, cipher, account)
        watcher_running = read_status(tx, account, settings.webhooks, cipher).watcher_running
    print(f"Webhook of {account} saved and turned on.")
    if dropped:
        print(f"Dropped {dropped} event(s) queued while it was off.")
    for line in next_steps(store, settings, account_name, watcher_running):
        print(line)
    print("Signing secret (shown only now; give it to the receiver to verify webhook-signature):")
    print(secret)


def next_steps(store: Store, settings: Settings, account_name: str | None, watcher_running: bool) -> list[str]:
    """What must happen for events to arrive: a watcher, with the same store and keys as this command."""
    watch = "imap-mcp watch" + (f" --account {account_name}" if account_name else "")
    where = "a PostgreSQL database" if store.postgres else f"the SQLite file {store.url.removeprefix('sqlite:///')}"
    steps = ["Next steps:"]
    if not settings.webhooks.enabled:
        steps.append("- IMAP_MCP_WEBHOOKS=false here: nothing is delivered while webhooks are off on this server.")
    if watcher_running:
        steps.append(f"- A watcher ({watch}) is running for this account: new mail is delivered from now on.")
    else:
        steps.append(
            f"- Events are delivered only while a watcher runs, and none is running for this account: start `{watch}` "
            "and keep it running (e.g. as a service; more than one may run, one is active)."
        )
    steps.append(
        f"- The watcher and every server replica need this command's IMAP_MCP_STORE (here: {where}) and the same "
        "IMAP_MCP_STORE_KEYS, which decrypt the URL, auth header, secret and events."
    )
    steps.append("- `imap-mcp webhook show` says whether a watcher is running and when it last heard from the mailbox.")
    return steps


def run_watch(settings: Settings) -> None:
    """Watch and deliver until SIGTERM or SIGINT; several may run, one holds the account's lease."""
    if not settings.webhooks.enabled:
        _fail("IMAP_MCP_WEBHOOKS=false: webhooks are turned off on this server, so there is nothing to watch.")
    try:
        store = _store(settings)
    except ImapMcpError as exc:
        _fail(str(exc))
    stop, active, added = threading.Event(), threading.Event(), threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    account = settings.imap.account
    holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    threads = [
        threading.Thread(target=_keep_lease, args=(store, account, holder, active, stop), daemon=True),
        threading.Thread(
            target=InboxWatcher(settings.imap, store, settings.webhooks, active, stop, added).run, daemon=True
        ),
    ]
    for thread in threads:
        thread.start()
    get_logger().info("watch: %s started (store: %r)", account, store)
    try:
        _pump(store, settings, active, stop, added)
    finally:
        stop.set()
        release_lease(store, account, holder)
        get_logger().info("watch: %s stopped", account)


def _keep_lease(store: Store, account: str, holder: str, active: threading.Event, stop: threading.Event) -> None:
    was_active: bool | None = None
    while not stop.is_set():
        try:
            held = hold_lease(store, account, holder, time.time())
        except ImapMcpError as exc:
            get_logger().warning("watch: lease not renewed (%s)", exc)
            held = False
        (active.set if held else active.clear)()
        if held != was_active:
            get_logger().info("watch: %s %s", account, "active" if held else "standing by (another watcher is active)")
            was_active = held
        stop.wait(LEASE_SECONDS / 3)


def _pump(
    store: Store, settings: Settings, active: threading.Event, stop: threading.Event, added: threading.Event
) -> None:
    cipher = StoreCipher([key.reveal() for key in settings.webhooks.store_keys])
    while not stop.is_set():
        delivered = False
        if active.is_set():
            try:
                delivered = deliver_one(store, cipher, settings.webhooks, settings.imap.account)
            except ImapMcpError as exc:
                get_logger().warning("watch: delivery skipped (%s)", exc)
        if not delivered:
            added.wait(PUMP_POLL)
            added.clear()
