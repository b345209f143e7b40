"""Hostile mail through `imap-mcp watch` (issue #25): every message becomes an event with bounded fields.

Real Dovecot, a real receiver on loopback, a SQLite store. A message the watcher could not
describe used to stop the webhook for good: its FETCH failed, the watcher reconnected with
backoff and read the same message again, and no later mail was ever delivered.
"""

from __future__ import annotations

import base64
import re
from email.errors import NonASCIILocalPartDefect
from email.policy import default as default_policy
from typing import Any

import pytest
from harness import append_message
from hostile.hostile_mail import many_addresses, messages
from hypothesis import HealthCheck, Phase, given, settings
from receiver import Receiver
from watching import Operator, wait_for_status

from imap_mcp.server.outgoing.compose import CONTROL_CHARACTERS
from imap_mcp.server.webhooks.payloads import MAX_ADDRESSES, MAX_FROM_CHARS, MAX_SUBJECT_CHARS

pytestmark = pytest.mark.slow

#: generated hostile messages put through one watcher run (raise it locally to keep looking)
CORPUS_SIZE = 12
CONTROLS = re.compile(f"[{CONTROL_CHARACTERS}\ud800-\udfff]")

NORMAL = (
    b"From: Bob Sender <bob@example.org>\r\nTo: someone@example.org\r\nSubject: after the flood\r\n\r\n"
    b"An ordinary message.\r\n"
)


def delivered(operator: Operator, *raws: bytes) -> tuple[list[int], dict[int, dict[str, Any]]]:
    """Append `raws` to INBOX while a watcher runs; their UIDs, and each event's data by UID once all arrived."""
    with Receiver("") as receiver:
        receiver.secret = operator.set_webhook(receiver.url())
        operator.start_watcher()
        operator.wait_until_watching()
        uids = [append_message(operator.account, raw) for raw in raws]
        try:
            deliveries = receiver.wait_for(len(raws))
        except AssertionError as missing:
            raise AssertionError(f"{missing}; the watcher logged:\n" + "\n".join(operator.log_lines())) from None
        wait_for_status(operator, "active", drained=True)
    return uids, {d.event["data"]["uid"]: d.event["data"] for d in deliveries}


def parsed_addresses(sender: str) -> list[str]:
    """The addresses a receiver reads from the event's `from` with an RFC 5322 (and RFC 6532) parser."""
    header = default_policy.header_factory("From", sender)
    assert all(isinstance(d, NonASCIILocalPartDefect) for d in header.defects), (sender, header.defects)
    return [address.addr_spec for address in header.addresses]


def assert_no_reconnect_loop(operator: Operator) -> None:
    failures = [line for line in operator.log_lines() if "connection failed" in line]
    assert failures == [], failures


def assert_not_logged(operator: Operator, *texts: str) -> None:
    """Senders and subjects never appear in the watcher's log."""
    logged = "\n".join(operator.log_lines())
    assert [text for text in texts if text in logged] == []


def test_a_from_of_forty_thousand_addresses_is_an_event_and_later_mail_still_arrives(
    sqlite_operator: Operator,
) -> None:
    """Its ENVELOPE is one IMAP line over 1,000,000 bytes: the watcher's FETCH failed, again and again."""
    (hostile_uid, normal_uid), events = delivered(sqlite_operator, many_addresses(40_000), NORMAL)
    assert sorted(events) == [hostile_uid, normal_uid]
    hostile = events[hostile_uid]
    assert parsed_addresses(hostile["from"]) == [f"person-{n:05d}@recipients.example.net" for n in range(MAX_ADDRESSES)]
    assert hostile["subject"] == "forty thousand senders" and hostile["date"]
    assert events[normal_uid]["from"] == "Bob Sender <bob@example.org>"
    assert events[normal_uid]["subject"] == "after the flood"
    assert_no_reconnect_loop(sqlite_operator)
    assert_not_logged(sqlite_operator, "person-00000", "forty thousand", "bob@example.org", "after the flood")


def test_a_forged_display_name_stays_one_quoted_name_and_the_subject_one_short_line(
    sqlite_operator: Operator,
) -> None:
    """The event's `from` was `Bob",<evil@x> <b@example.com>`: two addresses to whoever parses it."""
    forged = base64.b64encode(b'Bob",<evil@x>').decode()
    subject = base64.b64encode(("Line\r\nBcc: x@y\u2028" + "long " * 100).encode()).decode()
    quoted = b'From: "Bob\\",<evil@x>" <b@example.com>\r\nSubject: quoted\r\n\r\nHi.\r\n'
    encoded = f"From: =?utf-8?b?{forged}?= <b@example.com>\r\nSubject: =?utf-8?b?{subject}?=\r\n\r\nHi.\r\n"
    (quoted_uid, encoded_uid), events = delivered(sqlite_operator, quoted, encoded.encode())
    for uid in (quoted_uid, encoded_uid):
        assert events[uid]["from"] == '"Bob\\",<evil@x>" <b@example.com>'
        assert parsed_addresses(events[uid]["from"]) == ["b@example.com"]
    shown = events[encoded_uid]["subject"]
    assert shown.startswith("Line Bcc: x@y long long") and len(shown) == MAX_SUBJECT_CHARS
    assert_no_reconnect_loop(sqlite_operator)


def generated_corpus(count: int) -> list[bytes]:
    """`count` raw messages from the generated hostile-mail corpus (`tests/hostile/hostile_mail.py`)."""
    corpus: list[bytes] = []

    @settings(
        max_examples=count,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(raw=messages())
    def collect(raw: bytes) -> None:
        corpus.append(raw)

    collect()
    return corpus


def assert_within_bounds(data: dict[str, Any], raw: bytes) -> None:
    """An event's data as the README promises it for any message; `raw` is shown when it is not."""
    sender, subject = data["from"], data["subject"]
    assert isinstance(sender, str) and isinstance(subject, str), (data, raw[:2000])
    assert len(sender) <= MAX_FROM_CHARS and len(parsed_addresses(sender)) <= MAX_ADDRESSES, (data, raw[:2000])
    assert len(subject) <= MAX_SUBJECT_CHARS, (data, raw[:2000])
    assert not CONTROLS.search(sender + subject), (data, raw[:2000])
    assert data["date"] and data["id"].startswith("imap."), (data, raw[:2000])


def test_every_generated_hostile_message_becomes_a_bounded_event_and_the_next_mail_arrives(
    sqlite_operator: Operator,
) -> None:
    corpus = generated_corpus(CORPUS_SIZE)
    uids, events = delivered(sqlite_operator, *corpus, NORMAL)
    assert sorted(events) == sorted(uids)
    for uid, raw in zip(uids, corpus, strict=False):
        assert_within_bounds(events[uid], raw)
    assert events[uids[-1]]["from"] == "Bob Sender <bob@example.org>"
    assert events[uids[-1]]["subject"] == "after the flood"
    assert_no_reconnect_loop(sqlite_operator)
