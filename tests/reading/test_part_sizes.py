"""One size for an attachment everywhere: the decoded bytes get_attachments delivers, in get_message too."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest
from harness import Account, seeded_account, served, start_dovecot

from imap_mcp.server.demo.dovecot import DEFAULT_CAPS
from imap_mcp.server.reading.part_sizes import END_BYTES, base64_size

pytestmark = pytest.mark.anyio


async def _sizes(account: Account) -> list[tuple[list[int], list[int]]]:
    """(get_message's sizes, get_attachments' delivered sizes) of every INBOX message with attachments."""
    found = []
    async with served(account, mode="2026-07-28") as client:
        listed = await client.call_tool("search_messages", {"mailbox": "INBOX"})
        for message in listed.structured_content["messages"]:
            shown = (await client.call_tool("get_message", {"id": message["id"]})).structured_content
            if shown and shown["attachments"]:
                got = (await client.call_tool("get_attachments", {"id": message["id"]})).structured_content
                assert got is not None and not got["skipped"]
                found.append(([a["size"] for a in shown["attachments"]], [a["size"] for a in got["delivered"]]))
    return found


@pytest.mark.matrix
async def test_get_message_gives_the_size_get_attachments_delivers(account: Account) -> None:
    sizes = await _sizes(account)
    assert sizes and all(listed == delivered for listed, delivered in sizes), sizes
    assert ([26, 22], [26, 22]) in sizes  # invoice.pdf and Übersicht.txt: the stored base64 is 38 and 34 bytes


@pytest.fixture(scope="module")
def without_binary() -> Iterator[Account]:
    """A Dovecot that does not offer BINARY: sizes are counted from the parts' bytes instead."""
    caps = " ".join(c for c in DEFAULT_CAPS.split() if c != "BINARY")
    dovecot = start_dovecot(extra_config=[f"protocol imap {{\n  imap_capability = {caps}\n}}"])
    try:
        yield seeded_account(dovecot)
    finally:
        dovecot.stop()


async def test_without_binary_the_sizes_are_counted_the_same(without_binary: Account) -> None:
    sizes = await _sizes(without_binary)
    assert ([26, 22], [26, 22]) in sizes and all(listed == delivered for listed, delivered in sizes), sizes


@pytest.mark.parametrize("line", [76, 64])
@pytest.mark.parametrize("newline", [b"\r\n", b"\n"])
@pytest.mark.parametrize("length", [1025, 1026, 1027, 3000, 57 * 40, 57 * 40 + 1])
def test_a_large_base64_part_is_counted_from_its_ends(line: int, newline: bytes, length: int) -> None:
    data = bytes(range(256)) * (length // 256 + 1)
    text = base64.b64encode(data[:length])
    stored = newline.join(text[i : i + line] for i in range(0, len(text), line)) + newline
    assert base64_size(len(stored), stored[:END_BYTES], stored[-END_BYTES:]) == length


def test_a_base64_part_whose_lines_differ_is_not_counted() -> None:
    text = base64.b64encode(bytes(3000))
    stored = b"\r\n".join([text[:50], *(text[i : i + 76] for i in range(50, len(text), 76))]) + b"\r\n"
    assert base64_size(len(stored), stored[:END_BYTES], stored[-END_BYTES:]) is None
