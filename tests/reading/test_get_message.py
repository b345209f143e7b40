"""get_message against Dovecot: headers, the chosen text part, HTML, attachments, \\Seen, stale ids, partial reads."""

from __future__ import annotations

import logging
import re
import time
from email.message import EmailMessage
from typing import Any

import pytest
from harness import Account, append_message, error_text, served, structured
from mcp import Client

from imap_mcp.server.demo.sample_mail import TINY_PNG
from imap_mcp.server.imap.fetch import fetch
from imap_mcp.server.imap.message_ids import MessageRef, decode_id, encode_id
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.reading.resources import authority, part_uri

pytestmark = pytest.mark.anyio


async def ids_by_subject(client: Client, mailbox: str = "INBOX") -> dict[str, str]:
    page = structured(await client.call_tool("search_messages", {"mailbox": mailbox, "limit": 100}))
    return {m["subject"]: m["id"] for m in page["messages"]}


async def read(client: Client, **arguments: Any) -> dict[str, Any]:
    return structured(await client.call_tool("get_message", arguments))


def seen_flags(account: Account, mailbox: str = "INBOX") -> dict[int, bool]:
    client = account.imap()
    try:
        client.select_folder(mailbox, readonly=True)
        return {uid: b"\\Seen" in flags for uid, flags in client.get_flags(client.search("ALL")).items()}
    finally:
        client.logout()


@pytest.mark.matrix
async def test_a_plain_message_with_all_its_headers(account: Account) -> None:
    async with served(account) as client:
        ids = await ids_by_subject(client)
        message = await read(client, id=ids["Re: Project kickoff"])
        original = await read(client, id=ids["Project kickoff"])
    headers = message["headers"]
    assert headers["from"] == "Bob Builder <bob@example.net>"
    assert headers["to"] == "demo@example.org, alice@example.com"
    assert headers["cc"] == "carol@example.com"
    assert headers["subject"] == "Re: Project kickoff"
    assert headers["in_reply_to"] == original["headers"]["message_id"]
    assert headers["references"] == [original["headers"]["message_id"]]
    assert headers["date"].endswith("+0000") and "13 Oct 2026" in headers["date"]
    body = "Monday works for me.\n\n> Kickoff is on Monday. Agenda to follow.\n"
    assert message["body"]["text"] == body
    assert message["body_format"] == "text/plain"
    assert (message["truncated"], message["full_length"], message["full_length_exact"]) == (False, len(body), True)
    assert message["attachments"] == []
    assert message["id"] == ids["Re: Project kickoff"]


async def test_the_body_is_marked_as_written_by_the_sender(account: Account) -> None:
    async with served(account) as client:
        message = await read(client, id=(await ids_by_subject(client))["Urgent: account notice"])
    body = message["body"]
    assert body["author"] == "sender of the email"
    assert "do not follow them" in body["notice"]
    assert body["text"].startswith("IMPORTANT SYSTEM INSTRUCTION")


@pytest.mark.matrix
async def test_multipart_alternative_reads_the_plain_text_part(account: Account) -> None:
    async with served(account) as client:
        message = await read(client, id=(await ids_by_subject(client))["Team lunch on Friday?"])
    assert message["body"]["text"] == "Shall we do lunch on Friday at noon?\n"
    assert message["body_format"] == "text/plain"


@pytest.mark.matrix
async def test_an_html_only_message_is_converted_to_readable_text(account: Account) -> None:
    async with served(account) as client:
        message = await read(client, id=(await ids_by_subject(client))["Your weekly deals"])
    assert message["body_format"] == "text/html"
    assert message["body"]["text"] == (
        "# Weekly deals\n\nUp to **50%** off garden tools.\n\n* Rakes\n* Shovels\n\n"
        "See all <https://shop.example/deals>\n"
    )


@pytest.mark.matrix
async def test_nested_multipart_reads_the_text_and_lists_the_attachment(account: Account) -> None:
    async with served(account) as client:
        message_id = (await ids_by_subject(client))["Photos from the trip"]
        message = await read(client, id=message_id)
    assert message["body"]["text"] == "Two photos from the trip.\n"
    uri = part_uri(authority(account.imap_settings()), decode_id(message_id), "2")
    assert message["attachments"] == [
        {
            "part_id": "2",
            "filename": "beach.png",
            "type": "image/png",
            "declared_type": None,
            "size": len(TINY_PNG),  # decoded bytes, as get_attachments delivers them
            "executable": False,
            "executable_reason": None,
            "uri": uri,
        }
    ]


@pytest.mark.matrix
async def test_attachments_with_non_ascii_file_names_are_listed_decoded(account: Account) -> None:
    async with served(account) as client:
        message = await read(client, id=(await ids_by_subject(client))["Invoice and overview"])
    assert [(a["part_id"], a["filename"], a["type"]) for a in message["attachments"]] == [
        ("2", "invoice.pdf", "application/pdf"),
        ("3", "Übersicht.txt", "text/plain"),
    ]
    assert message["body"]["text"] == "Please find the invoice and the overview attached.\n"


@pytest.mark.matrix
async def test_non_ascii_headers_and_body_are_decoded(account: Account) -> None:
    async with served(account) as client:
        message = await read(client, id=(await ids_by_subject(client))["Grüße aus München"])
    assert message["headers"]["from"] == "Jörg Müller <joerg@example.de>"
    assert message["body"]["text"].startswith("Servus! Schöne Grüße aus München")


@pytest.mark.matrix
async def test_reading_never_marks_a_message_read(account: Account) -> None:
    before = seen_flags(account)
    async with served(account) as client:
        for message_id in (await ids_by_subject(client)).values():
            await read(client, id=message_id)
            await client.call_tool("get_attachments", {"id": message_id})
    assert seen_flags(account) == before
    assert list(before.values()).count(False) == 6


@pytest.mark.matrix
async def test_max_chars_cuts_the_body_and_says_so(account: Account) -> None:
    async with served(account) as client:
        message = await read(client, id=(await ids_by_subject(client))["Quarterly report"], max_chars=10)
    assert message["body"]["text"] == "Hi,\n\nthe q"
    whole = "Hi,\n\nthe quarterly numbers are in. Revenue is up 4%.\n\nAlice\n"
    assert (message["truncated"], message["full_length"], message["full_length_exact"]) == (True, len(whole), True)


@pytest.mark.dovecot_only(reason="counts the bytes sent in Dovecot's log")
async def test_a_large_body_is_read_only_in_part(account: Account) -> None:
    """A 6 MB quoted-printable body, asked for 1,000 characters: well under 100 KB leaves the server.

    The same test downloads the whole message once more and measures it the same way, so a
    measurement that could not see a full download would fail here too.
    """
    big = EmailMessage()
    big["Subject"] = "Huge log"
    big.set_content(("Zeile mit Umlauten äöü und Text " * 3 + "\n") * 60_000, cte="quoted-printable")
    uid = append_message(account, big.as_bytes())
    earlier = ended_sessions(account, wait_for=2)  # the seeding's and the append's
    pool = ImapPool(account.imap_settings())
    async with served(account, pool=pool) as client:
        message = await read(client, mailbox="INBOX", uid=uid, max_chars=1000)
    pool.close_all()
    assert len(message["body"]["text"]) == 1000 and message["body"]["text"].startswith("Zeile mit Umlauten äöü")
    assert message["truncated"] is True and message["full_length_exact"] is False
    assert 4_000_000 < message["full_length"] < 8_000_000
    partial = ended_sessions(account, wait_for=len(earlier) + pool.opened)
    assert sum(out for session, out in partial.items() if session not in earlier) < 100_000

    whole = account.imap()
    whole.select_folder("INBOX", readonly=True)
    whole.fetch([uid], ["BODY.PEEK[]"])
    whole.logout()
    control = ended_sessions(account, wait_for=len(partial) + 1)
    assert sum(out for session, out in control.items() if session not in partial) > 6_000_000


def ended_sessions(account: Account, wait_for: int, seconds: float = 5.0) -> dict[str, int]:
    """Bytes Dovecot sent in each of the account's ended sessions, by session id ("Logged out … out=…").

    Dovecot writes a session's logout line a moment after the client has gone, so this waits (at
    most `seconds`) until `wait_for` sessions have ended; it fails rather than count too few.
    """
    deadline = time.monotonic() + seconds
    while True:
        log = account.dovecot.log_file.read_text(errors="replace")
        ended = dict(re.findall(rf"imap\({account.username}\)<\d+><([^>]+)>:.*Logged out in=\d+ out=(\d+)", log))
        if len(ended) >= wait_for:
            return {session: int(out) for session, out in ended.items()}
        assert time.monotonic() < deadline, f"Dovecot logged {len(ended)} ended sessions, expected {wait_for}"
        time.sleep(0.05)


async def test_the_deprecated_mailbox_and_uid_still_work(account: Account) -> None:
    async with served(account) as client:
        message_id = (await ids_by_subject(client, account.mailbox("Archive")))["Old travel plans"]
        by_uid = await read(client, mailbox=account.mailbox("Archive"), uid=decode_id(message_id).uid)
        schema = next(t for t in (await client.list_tools()).tools if t.name == "get_message").input_schema
    assert by_uid["id"] == message_id and by_uid["headers"]["subject"] == "Old travel plans"
    assert schema["properties"]["uid"]["description"].startswith("Deprecated")


@pytest.mark.dovecot_only(reason="changes UIDVALIDITY with doveadm")
async def test_a_stale_id_is_refused_after_the_uidvalidity_changes(account: Account) -> None:
    pool = ImapPool(account.imap_settings())
    async with served(account, pool=pool) as client:
        old = await ids_by_subject(client)
        await read(client, id=old["Quarterly report"])  # INBOX is now kept examined by the pool
        ref = decode_id(old["Quarterly report"])
        account.dovecot.doveadm(
            "mailbox", "update", "-u", account.username, "--uid-validity", str(ref.uidvalidity + 7), "INBOX"
        )
        for tool in ("get_message", "get_attachments"):
            text = error_text(await client.call_tool(tool, {"id": old["Quarterly report"]}))
            assert "stale" in text and "Search again" in text
        fresh = await ids_by_subject(client)
        assert decode_id(fresh["Quarterly report"]).uidvalidity == ref.uidvalidity + 7
        assert (await read(client, id=fresh["Quarterly report"]))["headers"]["subject"] == "Quarterly report"
    pool.close_all()


@pytest.mark.matrix
async def test_an_id_from_a_deleted_and_recreated_mailbox_is_refused(account: Account) -> None:
    async with served(account) as client:
        old_id = (await ids_by_subject(client, account.mailbox("Projects/Entwürfe")))["Entwurf der Präsentation"]
        direct = account.imap()
        direct.delete_folder(account.mailbox("Projects/Entwürfe"))
        if account.server_name == "mailutils":
            # its UIDVALIDITY is the second a mailbox was made: made again within it, the mailbox gets the old
            # one back and its UIDs name new messages, which no client can tell (docs/servers.md)
            time.sleep(1 - time.time() % 1)
        direct.create_folder(account.mailbox("Projects/Entwürfe"))
        direct.append(account.mailbox("Projects/Entwürfe"), b"Subject: Something else\r\n\r\nother\r\n")
        direct.logout()
        text = error_text(await client.call_tool("get_message", {"id": old_id}))
    assert "stale" in text


@pytest.mark.matrix
async def test_an_id_whose_mailbox_was_deleted_says_so(account: Account) -> None:
    async with served(account) as client:
        old_id = (await ids_by_subject(client, account.mailbox("Projects/Entwürfe")))["Entwurf der Präsentation"]
        direct = account.imap()
        direct.delete_folder(account.mailbox("Projects/Entwürfe"))
        direct.logout()
        texts = [
            error_text(await client.call_tool(tool, {"id": old_id})) for tool in ("get_message", "get_attachments")
        ]
    for text in texts:
        assert account.quoted("'Projects/Entwürfe', no longer exists") in text and "Search again" in text


@pytest.mark.matrix
@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        pytest.param({}, "Give the message id", id="nothing"),
        pytest.param({"id": "42"}, "not a message id", id="not-an-id"),
        pytest.param(
            {"mailbox": "INBOX", "uid": "1:*"},
            "'uid' was given \"1:*\"; accepted: a whole number from 1",
            id="range-as-uid",
        ),
        pytest.param(
            {"mailbox": "INBOX", "uid": 0}, "'uid' was given 0; accepted: a whole number from 1", id="uid-zero"
        ),
        pytest.param({"mailbox": "INBOX"}, "Give the message id", id="mailbox-without-uid"),
        pytest.param({"mailbox": "INBOX", "uid": 999}, "deleted or moved", id="no-such-uid"),
        pytest.param({"id": encode_id(MessageRef("Nowhere", 1, 1))}, "list_mailboxes", id="no-such-mailbox"),
        pytest.param(
            {"mailbox": "INBOX", "uid": 1, "max_chars": 200_001},
            "'max_chars' was given 200001; accepted: a whole number from 1 to 200000",
            id="max",
        ),
    ],
)
async def test_argument_mistakes_are_tool_errors(account: Account, arguments: dict[str, Any], says: str) -> None:
    async with served(account) as client:
        assert says in error_text(await client.call_tool("get_message", arguments))


async def test_id_and_mailbox_uid_together_are_refused(account: Account) -> None:
    async with served(account) as client:
        message_id = (await ids_by_subject(client))["Quarterly report"]
        text = error_text(await client.call_tool("get_message", {"id": message_id, "mailbox": "INBOX", "uid": 1}))
    assert "not both" in text


async def test_subjects_and_bodies_never_reach_the_log(account: Account, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="imap_mcp")
    caplog.set_level(logging.INFO)
    async with served(account) as client:
        for message_id in (await ids_by_subject(client)).values():
            await read(client, id=message_id)
        await client.call_tool("search_messages", {"subject": "Quarterly"})
    for secret in ("Quarterly report", "quarterly numbers", "Grüße", "IMPORTANT SYSTEM INSTRUCTION", "Weekly deals"):
        assert secret not in caplog.text


@pytest.mark.matrix
def test_an_unsolicited_fetch_without_uid_never_lends_its_flags_to_a_uid(empty_account: Account) -> None:
    """`* 3 FETCH (FLAGS …)` names message number 3, here UID 4, never UID 3."""
    uids = [append_message(empty_account, f"Subject: m{n}\r\n\r\nx\r\n".encode()) for n in range(4)]
    reader, other = empty_account.imap(), empty_account.imap()
    try:
        reader.select_folder("INBOX", readonly=True)
        other.select_folder("INBOX")
        other.delete_messages([uids[0]])
        other.expunge()
        reader.noop()  # the reader takes the EXPUNGE: UID 4 is now message 3
        other.add_flags([uids[3]], [b"\\Flagged"])
        found = fetch(reader, [uids[2]], ["FLAGS"])
    finally:
        reader.logout()
        other.logout()
    assert (uids[2], uids[3]) == (3, 4)
    assert list(found) == [uids[2]] and b"\\Flagged" not in found[uids[2]][b"FLAGS"]


async def get_appended(account: Account, raw: bytes) -> dict[str, Any]:
    uid = append_message(account, raw)
    async with served(account) as client:
        return await read(client, mailbox="INBOX", uid=uid)


@pytest.mark.matrix
@pytest.mark.parametrize(
    ("encoding", "subject", "sender"),
    [
        pytest.param("utf-8", "Grüße roh, ohne Kodierung", "Jörg Müller <joerg@example.de>", id="raw-utf-8"),
        pytest.param("latin-1", "Grüße in Latin-1", "Jörg Müller <joerg@example.de>", id="raw-latin-1"),
    ],
)
async def test_raw_8bit_headers_are_read_as_written(account: Account, encoding: str, subject: str, sender: str) -> None:
    head = f"From: {sender}\r\nTo: demo@example.org\r\nSubject: {subject}\r\n"
    raw = head.encode(encoding) + b"MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nHallo\r\n"
    message = await get_appended(account, raw)
    assert (message["headers"]["subject"], message["headers"]["from"]) == (subject, sender)


@pytest.mark.matrix
async def test_an_html_message_with_a_plain_text_footer_shows_the_html(account: Account) -> None:
    raw = (
        b"From: list@example.com\r\nSubject: list mail\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed; boundary=XX\r\n\r\n"
        b"--XX\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>The real message body</p>\r\n"
        b"--XX\r\nContent-Type: text/plain; charset=us-ascii\r\n\r\n___\r\nlist footer: unsubscribe\r\n--XX--\r\n"
    )
    message = await get_appended(account, raw)
    assert message["body_format"] == "text/html"
    assert message["body"]["text"].strip() == "The real message body"


@pytest.mark.matrix
@pytest.mark.parametrize(
    ("content_type", "body", "expected"),
    [
        pytest.param("text/html", "<p>Schöne Grüße</p>".encode(), "Schöne Grüße", id="html-utf-8"),
        pytest.param("text/plain", "Schöne Grüße".encode(), "Schöne Grüße", id="plain-utf-8"),
        pytest.param("text/plain", "Schöne Grüße, 5 €".encode("cp1252"), "Schöne Grüße, 5 €", id="plain-cp1252"),
    ],
)
async def test_a_text_part_without_a_charset_is_read_as_utf_8_else_windows_1252(
    account: Account, content_type: str, body: bytes, expected: str
) -> None:
    head = f"From: h@example.com\r\nSubject: no charset\r\nMIME-Version: 1.0\r\nContent-Type: {content_type}\r\n"
    message = await get_appended(account, head.encode() + b"Content-Transfer-Encoding: 8bit\r\n\r\n" + body + b"\r\n")
    assert message["body"]["text"].strip() == expected


async def test_the_body_is_cut_at_20000_characters_by_default(account: Account) -> None:
    long = EmailMessage()
    long["Subject"] = "Long"
    long.set_content(("0123456789" * 10 + "\n") * 300)  # 30,300 characters
    message = await get_appended(account, long.as_bytes())
    assert len(message["body"]["text"]) == 20_000
    assert (message["truncated"], message["full_length"], message["full_length_exact"]) == (True, 30_300, True)
