"""One hostile message breaks nothing: each case of issue 11 against Dovecot, and calls after it.

Every message here was sent as anyone on the Internet could send it. Each test reads it with
every reading tool and then reads an ordinary message, which must come back as it always does.
"""

from __future__ import annotations

import base64
import bz2
import datetime as dt
import zlib
from typing import Any

import pytest
from harness import Account, error_text, message_ids, search, served, structured
from hostile.hostile_mail import many_addresses
from mcp import Client
from mcp.types import BlobResourceContents, EmbeddedResource

from imap_mcp.server.imap.message_ids import decode_id
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.reading import reader
from imap_mcp.server.reading.html_text import Converted, convert_html

pytestmark = pytest.mark.anyio

RECEIVED = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)
ORDINARY = b"From: friend@example.com\r\nSubject: ordinary\r\n\r\nAn ordinary message.\r\n"


def head(subject: str, content_type: str, extra: str = "") -> bytes:
    return (
        f"From: stranger@example.net\r\nTo: demo@example.org\r\nSubject: {subject}\r\nMIME-Version: 1.0\r\n"
        f"Content-Type: {content_type}\r\n{extra}\r\n"
    ).encode()


def appended_ids(account: Account, *raws: bytes) -> list[str]:
    """Append `raws` to a fresh mailbox of their own, each received a minute after the one before; their ids."""
    client = account.imap()
    try:
        client.create_folder("Hostile")
        for minute, raw in enumerate(raws):
            client.append("Hostile", raw, msg_time=RECEIVED + dt.timedelta(minutes=minute))
    finally:
        client.logout()
    return message_ids(account, "Hostile")


async def search_hostile(client: Client) -> dict[str, Any]:
    return await search(client, mailbox="Hostile", limit=100)


async def read(client: Client, message_id: str) -> dict[str, Any]:
    return structured(await client.call_tool("get_message", {"id": message_id}))


async def assert_still_reads_the_ordinary_message(client: Client, ordinary_id: str) -> None:
    """What every later call must still see: the mailbox, and a message that exists, as they are."""
    page = await search_hostile(client)
    assert ordinary_id in [m["id"] for m in page["messages"]]
    message = await read(client, ordinary_id)
    assert message["body"]["text"] == "An ordinary message.\n"
    listed = structured(await client.call_tool("list_mailboxes", {"counts": True}))
    assert any(box["name"] == "Hostile" for box in listed["mailboxes"])


async def test_an_rfc_2231_parameter_naming_a_codec_that_is_no_charset_is_read_as_utf_8(account: Account) -> None:
    """`base64` is a codec Python knows but no charset: decoding a file name with it raised LookupError."""
    raw = (
        head("codec in a parameter", "multipart/mixed; boundary=B")
        + b"--B\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nsee attachment\r\n"
        + b"--B\r\nContent-Type: application/octet-stream\r\n"
        + b"Content-Disposition: attachment; filename*=base64''%C3%9Cbersicht.txt\r\n"
        + b"Content-Transfer-Encoding: base64\r\n\r\naGVsbG8=\r\n--B--\r\n"
    )
    hostile_id, ordinary_id = appended_ids(account, raw, ORDINARY)
    async with served(account) as client:
        page = await search_hostile(client)
        assert [m["subject"] for m in page["messages"]] == ["ordinary", "codec in a parameter"]
        assert page["messages"][1]["has_attachments"] is True
        message = await read(client, hostile_id)
        assert message["attachments"][0]["filename"] == "Übersicht.txt"
        attachments = structured(await client.call_tool("get_attachments", {"id": hostile_id}))
        assert attachments["delivered"][0]["filename"] == "Übersicht.txt"
        await assert_still_reads_the_ordinary_message(client, ordinary_id)


@pytest.mark.parametrize("codec", ["zlib", "bz2", "base64", "rot13", "uu", "hex", "undefined", "punycode"])
async def test_a_charset_that_is_no_text_encoding_never_decodes_through_that_codec(
    account: Account, codec: str
) -> None:
    """A "charset" naming a decompressing codec hit an `assert` (gone under python -O: then it decompressed)."""
    payloads = {"zlib": zlib.compress(b"A" * 100_000), "bz2": bz2.compress(b"A" * 100_000)}
    payload = payloads.get(codec, b"plain words")
    raw = head("charset " + codec, f"text/plain; charset={codec}", "Content-Transfer-Encoding: base64\r\n")
    raw += base64.encodebytes(payload).replace(b"\n", b"\r\n")
    hostile_id, ordinary_id = appended_ids(account, raw, ORDINARY)
    async with served(account) as client:
        message = await read(client, hostile_id)
        assert message["full_length"] <= len(payload), "the body was decompressed or expanded through the charset"
        assert "A" * 1000 not in message["body"]["text"]
        if codec not in payloads:
            assert message["body"]["text"] == "plain words"
        await assert_still_reads_the_ordinary_message(client, ordinary_id)


@pytest.mark.parametrize("charset", ["utf-32", "utf-16"])
async def test_a_text_in_a_byte_order_charset_without_its_byte_order_mark_is_read_as_undeclared(
    account: Account, charset: str
) -> None:
    """Found by the generated-mail test: Python's UTF-32 decoder raises even with errors="replace" when the
    bytes do not start with a byte-order mark, and get_message crashed instead of answering."""
    raw = head("charset " + charset, f"text/plain; charset={charset}") + b"plain words without a mark\r\n"
    hostile_id, ordinary_id = appended_ids(account, raw, ORDINARY)
    async with served(account) as client:
        message = await read(client, hostile_id)
        assert message["id"] == hostile_id and message["body"]["text"].strip() != ""
        if charset == "utf-32":  # the decoder refuses: read as undeclared text (UTF-8 here)
            assert message["body"]["text"] == "plain words without a mark\n"
        await assert_still_reads_the_ordinary_message(client, ordinary_id)


def many_parts(count: int) -> bytes:
    parts = b"".join(
        f'--B\r\nContent-Type: text/plain; charset=us-ascii; name="part-number-{n:05d}-of-a-long-message.txt"\r\n'
        f'Content-Disposition: attachment; filename="part-number-{n:05d}-of-a-long-message.txt"\r\n\r\n'
        f"x\r\n".encode()
        for n in range(count)
    )
    return head("ten thousand parts", "multipart/mixed; boundary=B") + parts + b"--B--\r\n"


async def test_a_from_header_with_forty_thousand_addresses_is_listed_as_unreadable_with_its_id(
    account: Account,
) -> None:
    """Its ENVELOPE is one IMAP line over imaplib's 1,000,000 bytes: the whole page failed, then the next calls."""
    before_id, hostile_id, ordinary_id = appended_ids(account, ORDINARY, many_addresses(40_000), ORDINARY)
    async with served(account) as client:
        page = await search_hostile(client)
        assert [m["id"] for m in page["messages"]] == [ordinary_id, hostile_id, before_id]
        hostile = page["messages"][1]
        assert "over 1000000 bytes" in hostile["unreadable"]
        assert hostile["uid"] == decode_id(hostile_id).uid and hostile["size"] > 1_000_000
        assert [m["unreadable"] for m in page["messages"][::2]] == [None, None]
        assert page["messages"][0]["subject"] == "ordinary"
        message = await read(client, hostile_id)  # its headers come as a literal, which has no line limit
        sender = message["headers"]["from"]
        assert sender.startswith("person-00000@recipients.example.net, person-00001@")
        assert 6_000 < sender.count("@") < 40_000, "the header fields are read up to 256 KiB, not whole"
        assert message["body"]["text"] == "Hello all.\n"
        await assert_still_reads_the_ordinary_message(client, ordinary_id)


async def test_a_message_with_ten_thousand_parts_is_unreadable_everywhere_and_breaks_nothing(
    account: Account,
) -> None:
    """Its BODYSTRUCTURE is one IMAP line over 1,000,000 bytes."""
    hostile_id, ordinary_id = appended_ids(account, many_parts(10_000), ORDINARY)
    async with served(account) as client:
        page = await search_hostile(client)
        assert [m["id"] for m in page["messages"]] == [ordinary_id, hostile_id]
        assert "over 1000000 bytes" in page["messages"][1]["unreadable"]
        for tool in ("get_message", "get_attachments"):
            text = error_text(await client.call_tool(tool, {"id": hostile_id}))
            assert f"Message {hostile_id} cannot be read" in text and "over 1000000 bytes" in text
        await assert_still_reads_the_ordinary_message(client, ordinary_id)


async def test_a_connection_left_in_the_middle_of_a_response_is_closed_not_reused(account: Account) -> None:
    """An operation that fails before the server's answer was read leaves that answer to the next caller."""
    pool = ImapPool(account.imap_settings())
    used: list[object] = []

    def interrupted(client: Any) -> None:
        used.append(client)
        client.select_folder("INBOX", readonly=True)
        client._imap._command("UID", "FETCH", "1:*", "(BODY.PEEK[])")  # a failure before reading the answer
        raise RuntimeError("parser gave up")

    with pytest.raises(RuntimeError):
        await pool.run(interrupted)

    def listed(client: Any) -> Any:
        used.append(client)
        return client.list_folders()

    folders = await pool.run(listed)
    assert used[1] is not used[0], "the connection with an unread answer went back to the pool"
    assert {name for _, _, name in folders} >= {"INBOX", "Archive"}
    assert pool.opened == 2
    pool.close_all()


async def test_deeply_nested_html_converts_to_text_linear_in_its_size(account: Account) -> None:
    """79 KB of nested lists became 243 million characters (and took 38 s and 300 MB)."""
    html = "<ul><li>item " * 6_000 + "deepest"
    raw = head("nested lists", "text/html; charset=utf-8") + html.encode() + b"\r\n"
    hostile_id, ordinary_id = appended_ids(account, raw, ORDINARY)
    async with served(account) as client:
        message = await client.call_tool("get_message", {"id": hostile_id, "max_chars": 200_000})
        body = structured(message)
        assert body["full_length"] < 10 * len(html)
        assert body["body"]["text"].count("item") == 6_000 and "deepest" in body["body"]["text"]
        await assert_still_reads_the_ordinary_message(client, ordinary_id)


@pytest.mark.parametrize(
    "uid_text",
    [
        pytest.param("\u0667", id="arabic-indic-seven"),
        pytest.param("\u00b2", id="superscript-two"),
        pytest.param("\uff17", id="fullwidth-seven"),
        pytest.param("07", id="leading-zero"),
    ],
)
async def test_an_id_is_accepted_in_exactly_the_spelling_a_tool_returned(account: Account, uid_text: str) -> None:
    """Other digits were read as aliases of the id (Arabic-Indic 7 as 7), or raised an uncaught ValueError (²)."""
    matching: list[str | None] = [i for i in message_ids(account, "INBOX") if decode_id(i).uid == 7]
    (seventh,) = matching or [None]
    assert seventh is not None
    alias = seventh.rsplit(".", 1)[0] + "." + uid_text
    async with served(account) as client:
        for tool in ("get_message", "get_attachments"):
            text = error_text(await client.call_tool(tool, {"id": alias}))
            assert "is not a message id" in text
        assert structured(await client.call_tool("get_message", {"id": seventh}))["uid"] == 7


async def test_broken_base64_in_an_encoded_word_and_in_an_attachment_is_read_leniently(account: Account) -> None:
    """Found by the generator: a subject `=?utf-8?B?…?=` of bad length, an attachment of bad length, both raised."""
    raw = (
        b"From: stranger@example.net\r\nSubject: =?utf-8?B?UnalUeAIPAOYvJ7UkGQeK?=\r\nMIME-Version: 1.0\r\n"
        b"Content-Type: multipart/mixed; boundary=B\r\n\r\n"
        b"--B\r\nContent-Type: text/plain\r\n\r\nbody\r\n"
        b"--B\r\nContent-Type: application/octet-stream; name=a.bin\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        b"aGVsbG8=d29y\r\nbGQ=Z\r\n--B--\r\n"
    )
    hostile_id, ordinary_id = appended_ids(account, raw, ORDINARY)
    async with served(account) as client:
        page = await search_hostile(client)
        assert page["messages"][1]["subject"] == "=?utf-8?B?UnalUeAIPAOYvJ7UkGQeK?="
        message = await read(client, hostile_id)
        assert message["headers"]["subject"] == "=?utf-8?B?UnalUeAIPAOYvJ7UkGQeK?="
        result = await client.call_tool("get_attachments", {"id": hostile_id})
        assert structured(result)["delivered"][0]["size"] == len(b"helloworld")
        attachment = result.content[1]
        assert isinstance(attachment, EmbeddedResource) and isinstance(attachment.resource, BlobResourceContents)
        assert attachment.resource.blob == base64.b64encode(b"helloworld").decode()
        await assert_still_reads_the_ordinary_message(client, ordinary_id)


async def test_html_is_converted_after_the_connection_went_back_to_the_pool(
    account: Account, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four slow HTML mails occupied every pooled connection while they were converted."""
    pool = ImapPool(account.imap_settings(), max_size=1)
    slot_free_while_converting: list[bool] = []
    convert = convert_html  # the function reader.py imported, before it is replaced there

    def watched(html: str) -> Converted:
        free = pool._slots.acquire(blocking=False)  # the pool's only connection slot
        if free:
            pool._slots.release()
        slot_free_while_converting.append(free)
        return convert(html)

    monkeypatch.setattr(reader, "convert_html", watched)
    raw = head("html", "text/html; charset=utf-8") + b"<p>Hello <b>there</b></p>\r\n"
    (html_id,) = appended_ids(account, raw)
    async with served(account, pool=pool) as client:
        assert (await read(client, html_id))["body"]["text"] == "Hello **there**\n"
    assert slot_free_while_converting == [True]
