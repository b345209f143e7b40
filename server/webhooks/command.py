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
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, NoReturn

from ..accounts.loading import ACCOUNTS_FILE_VARIABLE
from ..config import Settings
from ..errors import ImapMcpError
from ..logs import get_logger
from ..serving.reloading import RELOAD_POLL, AccountsFile
from ..setting_values import ConfigError
from ..store.clock import store_time
from ..store.database import Store
from .cipher import StoreCipher
from .fleet import Fleet
from .leases import LEASE_SECONDS, live_members
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

if TYPE_CHECKING:
    from ..accounts.loading import Accounts


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
    alone = f"imap-mcp watch --account {account_name}" if account_name else "imap-mcp watch"
    where = "a PostgreSQL database" if store.postgres else f"the SQLite file {store.url.removeprefix('sqlite:///')}"
    with store.transaction() as tx:
        sharing = live_members(tx, store_time(tx))
    steps = ["Next steps:"]
    if not settings.webhooks.enabled:
        steps.append("- IMAP_MCP_WEBHOOKS=false here: nothing is delivered while webhooks are off on this server.")
    if watcher_running:
        steps.append("- A watcher is running for this account: new mail is delivered from now on.")
    elif sharing:
        steps.append(
            f"- {sharing} watcher(s) (imap-mcp watch) share this store's accounts: one takes this account within "
            f"{LEASE_SECONDS:g} s if the account is in its accounts file; `webhook show` says when."
        )
    else:
        steps.append(
            "- Events are delivered only while a watcher runs, and none is running for this account: start "
            "`imap-mcp watch` (every account of the accounts file that has a webhook; or "
            f"`{alone}` for this one) and keep it running, e.g. as a service; any number may run and share the "
            "accounts."
        )
    steps.append(
        f"- The watcher and every server replica need this command's IMAP_MCP_STORE (here: {where}) and the same "
        "IMAP_MCP_STORE_KEYS, which decrypt the URL, auth header, secret and events."
    )
    steps.append("- `imap-mcp webhook show` says whether a watcher is running and when it last heard from the mailbox.")
    return steps


def run_watch(
    accounts: Accounts,
    env: Mapping[str, str],
    name: str | None = None,
    max_accounts: int | None = None,
    lease_seconds: float = LEASE_SECONDS,
) -> None:
    """Watch and deliver until SIGTERM or SIGINT: every account with a webhook (or the one named), sharing them with
    every other watcher of the same store (`fleet`); the accounts file re-read on SIGHUP and when it changes."""
    watched = _watched(accounts, name)
    if not watched:
        _fail("IMAP_MCP_WEBHOOKS=false: webhooks are turned off on this server, so there is nothing to watch.")
    holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    fleets = _Fleets(holder, member=name is None, max_accounts=max_accounts, lease_seconds=lease_seconds)
    try:
        fleets.update(watched)
    except ImapMcpError as exc:
        fleets.stop()
        _fail(str(exc))
    stop, attention, hangup = threading.Event(), threading.Event(), threading.Event()

    def stopping(*_: object) -> None:
        stop.set()
        attention.set()

    def hung_up(*_: object) -> None:
        hangup.set()
        attention.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stopping)
    signal.signal(signal.SIGHUP, hung_up)
    reloading = AccountsFile(env, accounts) if accounts.source is not None else None
    get_logger().info("watch: %d account(s) to watch (%s); holder %s", len(watched), fleets, holder)
    try:
        while not stop.is_set():
            attention.wait(RELOAD_POLL)
            attention.clear()
            if stop.is_set():
                break
            asked = hangup.is_set()
            hangup.clear()
            if reloading is None:
                if asked:
                    get_logger().info(
                        "watch: SIGHUP, but there is no accounts file to re-read (one account of the environment)"
                    )
                continue
            if asked or reloading.changed():
                reloaded = reloading.reload("SIGHUP" if asked else "the file changed")
                if reloaded is not None:
                    fleets.update(_watched(reloaded, name, at_start=False))
    finally:
        fleets.stop()
        get_logger().info("watch: stopped")


def _watched(accounts: Accounts, name: str | None, at_start: bool = True) -> dict[str, Settings]:
    """The settings of the accounts to watch (those with webhooks on), by store key (`ImapSettings.account`)."""
    if name is not None and accounts.source is None:
        _fail(f"--account {name!r} needs {ACCOUNTS_FILE_VARIABLE}: set it to the accounts file.")
    try:
        chosen = list(accounts.accounts) if name is None else [accounts.named(name)]
    except ConfigError as exc:
        if at_start:
            _fail(str(exc))
        get_logger().warning("watch: the account %s is no longer in the accounts file: nothing to watch", name)
        chosen = []
    return {a.settings.imap.account: a.settings for a in chosen if a.settings.webhooks.enabled}


class _Fleets:
    """The fleet of each store the accounts use (most deployments: one), each renewing in a thread of its own."""

    def __init__(self, holder: str, *, member: bool, max_accounts: int | None, lease_seconds: float) -> None:
        self.holder = holder
        self.member = member
        self.max_accounts = max_accounts
        self.lease_seconds = lease_seconds
        self._stop = threading.Event()
        self._fleets: dict[str, tuple[Fleet, threading.Thread]] = {}

    def __str__(self) -> str:
        stores = [repr(fleet.store) for fleet, _ in self._fleets.values()]
        return f"store: {', '.join(stores)}" if len(stores) == 1 else f"{len(stores)} stores: {', '.join(stores)}"

    def update(self, watched: Mapping[str, Settings]) -> None:
        """Give each store's fleet its accounts; a store not seen before is opened (`StoreError` if it cannot be)."""
        by_store: dict[str, dict[str, Settings]] = {}
        for key, settings in watched.items():
            by_store.setdefault(settings.webhooks.store_url, {})[key] = settings
        for url in by_store.keys() - self._fleets.keys():
            fleet = Fleet(
                Store(url),
                self.holder,
                member=self.member,
                max_accounts=self.max_accounts,
                lease_seconds=self.lease_seconds,
            )
            thread = threading.Thread(target=fleet.run, args=(self._stop,), name="watch-fleet", daemon=True)
            self._fleets[url] = (fleet, thread)
            fleet.update(by_store[url])
            thread.start()
        for url, (fleet, _) in self._fleets.items():
            fleet.update(by_store.get(url, {}))

    def stop(self) -> None:
        """Stop every fleet: each gives up its leases once its attempts in flight ended."""
        self._stop.set()
        for fleet, _ in self._fleets.values():
            fleet.wake.set()
        for _, thread in self._fleets.values():
            thread.join()
