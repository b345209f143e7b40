"""Delivery to a hostile or failing receiver: each attempt bounded, no redirect followed, every failure logged.

An attempt has POST_TIMEOUT seconds in all and reads nothing of the answer but its status line and
headers; a 3xx is a failure, never followed; plain http:// goes to loopback only. Every failed attempt
is one log line with its error, its number and when the next one is due, never the URL path or
query, the auth header or the signing secret. Against a real receiver on loopback and real SQLite.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from hostile_http import HostilePeer, Listener
from webhook_helpers import ACCOUNT, AUTH_HEADER, LogLines, add_events, set_columns

from imap_mcp.server.store.database import Store
from imap_mcp.server.webhooks.cipher import StoreCipher
from imap_mcp.server.webhooks.delivery import POST_TIMEOUT, deliver_one
from imap_mcp.server.webhooks.rows import WebhookRow, load_row
from imap_mcp.server.webhooks.settings import FAILURE_THRESHOLD, WebhookSettings

#: how long a test waits for what must end within seconds (a wait for the result, not a measure of speed)
GENEROUS = 60.0
HOOK_PATH = "/hooks/private-path-8c2?token=query-secret-5e1"


@pytest.fixture
def store_url(tmp_path: object) -> str:
    """SQLite only: what is bounded here is the HTTP side, the same for every store."""
    return f"sqlite:///{tmp_path}/store.sqlite3"


@dataclass
class Hook:
    """The account's webhook in a real store, its events, and the watcher's log."""

    settings: WebhookSettings
    store: Store
    keys: list[str]
    save: Callable[..., str]
    log: LogLines

    def one_event(self) -> None:
        add_events(self.store, self.settings, 1, time.time())

    def attempt(self) -> WebhookRow:
        """One delivery attempt, as the watcher's pump makes it; the row after it."""
        args = (self.store, StoreCipher(self.keys), self.settings, ACCOUNT)
        pump = threading.Thread(target=deliver_one, args=args, daemon=True)
        pump.start()
        pump.join(GENEROUS)
        assert not pump.is_alive(), f"the delivery attempt was still going after {GENEROUS:g} s"
        with self.store.transaction() as tx:
            row = load_row(tx, ACCOUNT)
        assert row is not None
        return row

    def failure_lines(self) -> list[str]:
        return [line for line in self.log.lines if line.startswith(f"webhook: {ACCOUNT} delivery") and "failed" in line]


@pytest.fixture
def hook(
    hook_settings: WebhookSettings,
    store: Store,
    keys: list[str],
    save_webhook: Callable[..., str],
    server_log: LogLines,
) -> Hook:
    return Hook(hook_settings, store, keys, save_webhook, server_log)


def assert_no_secret(texts: list[str], secret: str) -> None:
    shown = "\n".join(texts)
    for value in ("private-path-8c2", "query-secret-5e1", AUTH_HEADER[1], secret, secret.removeprefix("whsec_")):
        assert value not in shown, value


@pytest.mark.parametrize(("status", "scheme"), [(307, "http"), (302, "https"), (308, "https")])
def test_a_redirect_is_a_failure_and_is_not_followed(
    status: int,
    scheme: str,
    hook: Hook,
) -> None:
    with Listener() as elsewhere, HostilePeer() as peer:
        peer.redirect(status, elsewhere.url(scheme, HOOK_PATH))
        secret = hook.save(url=peer.url(HOOK_PATH))
        hook.one_event()
        row = hook.attempt()
        assert len(peer.requests) == 1
    assert elsewhere.connections == 0, "the redirect target was never contacted"
    assert row.last_error == f"HTTP {status} (redirects are not followed)" and row.consecutive_failures == 1
    [line] = hook.failure_lines()
    assert f"(HTTP {status} (redirects are not followed))" in line and "attempt 1;" in line
    assert "next retry in 1 s" in line
    assert_no_secret([*hook.log.lines, row.last_error], secret)


@pytest.mark.slow
def test_a_trickling_receiver_fails_the_attempt_at_its_deadline(hook: Hook) -> None:
    with HostilePeer() as peer:
        peer.trickle()  # one byte a second for ever: only a deadline for the whole attempt ends it
        secret = hook.save(url=peer.url(HOOK_PATH))
        hook.one_event()
        row = hook.attempt()
    assert row.last_error == f"no answer within {POST_TIMEOUT:g} s" and row.delivered_sequence == 0
    [line] = hook.failure_lines()
    assert f"(no answer within {POST_TIMEOUT:g} s)" in line and "attempt 1;" in line
    assert_no_secret([*hook.log.lines, row.last_error], secret)


@pytest.mark.parametrize("status", [500, 200])
def test_an_endless_answer_is_not_read_only_its_status_counts(
    status: int,
    hook: Hook,
) -> None:
    with HostilePeer() as peer:
        peer.endless(status)
        secret = hook.save(url=peer.url(HOOK_PATH))
        hook.one_event()
        row = hook.attempt()
    if status == 200:
        assert row.delivered_sequence == 1 and row.consecutive_failures == 0
        assert hook.failure_lines() == []
    else:
        assert row.last_error == "HTTP 500" and row.delivered_sequence == 0
        [line] = hook.failure_lines()
        assert "(HTTP 500)" in line and "attempt 1;" in line
    assert_no_secret(hook.log.lines, secret)


def test_every_failed_attempt_is_logged_with_its_number_and_next_retry(hook: Hook) -> None:
    with HostilePeer() as peer:
        peer.answer(500, b'{"error": "down"}')
        secret = hook.save(url=peer.url(HOOK_PATH))
        hook.one_event()
        for _ in range(FAILURE_THRESHOLD):
            hook.attempt()
            set_columns(hook.store, next_retry_at=None)  # due again at once: the test does not wait out the backoff
        assert len(peer.requests) == FAILURE_THRESHOLD
    lines = hook.failure_lines()
    assert len(lines) == FAILURE_THRESHOLD, lines
    waits = [min(2**n, hook.settings.retry_interval) for n in range(FAILURE_THRESHOLD - 1)]
    for number, (line, wait) in enumerate(zip(lines, waits, strict=False), start=1):
        assert line.endswith(f"delivery to 127.0.0.1 failed (HTTP 500), attempt {number}; next retry in {wait} s")
    paused = f"attempt {FAILURE_THRESHOLD}; delivery paused, next retry in {hook.settings.retry_interval} s"
    assert lines[-1].endswith(f"failed (HTTP 500), {paused}")
    assert_no_secret(hook.log.lines, secret)


def test_plain_http_off_loopback_is_never_posted_to(hook: Hook) -> None:
    # saved by an older version, which took any http:// URL (.invalid never resolves: RFC 6761)
    secret = hook.save(url=f"http://hooks.example.invalid{HOOK_PATH}")
    hook.one_event()
    row = hook.attempt()
    assert row.last_error is not None and "http:// is accepted only for a loopback host" in row.last_error
    assert row.delivered_sequence == 0 and row.consecutive_failures == 1
    [line] = hook.failure_lines()
    assert "delivery to hooks.example.invalid failed (" in line and "loopback" in line and "attempt 1;" in line
    assert_no_secret([*hook.log.lines, row.last_error], secret)
