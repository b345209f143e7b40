"""get_attachments: inline embedded resources under a cap, or new files in IMAP_DOWNLOAD_DIR, never outside it."""

from __future__ import annotations

import base64
import itertools
import os
import socket
from dataclasses import replace
from email.message import EmailMessage
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from fault_proxy import Fault, FaultProxy
from harness import (
    Account,
    ProgressNotifications,
    ServerLog,
    append_message,
    error_text,
    served,
    stdio_params,
    structured,
)
from imapclient import IMAPClient
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.types import EmbeddedResource

from imap_mcp.server.config import DEFAULT_MAX_ATTACHMENT_BYTES as INLINE_LIMIT_BYTES
from imap_mcp.server.config import ImapSettings
from imap_mcp.server.demo.sample_mail import TINY_PNG
from imap_mcp.server.imap.connection import connect
from imap_mcp.server.imap.message_ids import decode_id
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.reading.attachments import CHUNK_BYTES

pytestmark = pytest.mark.anyio

INVOICE = b"%PDF-1.4\n% sample invoice\n"
OVERVIEW = "Übersicht der Kosten\n".encode()


def with_download_dir(account: Account, directory: Path) -> Any:
    return replace(account.settings(), download_dir=directory)


async def invoice_id(client: Client) -> str:
    page = structured(await client.call_tool("search_messages", {"subject": "Invoice and overview"}))
    return str(page["messages"][0]["id"])


def message_with(*files: tuple[str, bytes]) -> bytes:
    message = EmailMessage()
    message["Subject"] = "Files"
    message.set_content("see attached\n")
    for name, data in files:
        message.add_attachment(data, maintype="application", subtype="octet-stream", filename=name)
    return message.as_bytes()


@pytest.mark.matrix
async def test_inline_attachments_are_embedded_resources(account: Account) -> None:
    async with served(account) as client:
        result = await client.call_tool("get_attachments", {"id": await invoice_id(client)})
    summary = structured(result)
    resources = [block for block in result.content if isinstance(block, EmbeddedResource)]
    assert [base64.b64decode(r.resource.blob) for r in resources] == [INVOICE, OVERVIEW]  # type: ignore[union-attr]
    assert [r.resource.mime_type for r in resources] == ["application/pdf", "text/plain"]
    assert str(resources[0].resource.uri).endswith("/;SECTION=2")
    assert [(f["part_id"], f["filename"], f["size"]) for f in summary["delivered"]] == [
        ("2", "invoice.pdf", len(INVOICE)),
        ("3", "Übersicht.txt", len(OVERVIEW)),
    ]
    assert summary["inline_limit_bytes"] == INLINE_LIMIT_BYTES and summary["skipped"] == []


async def test_one_part_by_id_and_unknown_parts_refused(account: Account) -> None:
    async with served(account) as client:
        message_id = await invoice_id(client)
        one = structured(await client.call_tool("get_attachments", {"id": message_id, "part_ids": ["3"]}))
        text = error_text(await client.call_tool("get_attachments", {"id": message_id, "part_ids": ["1"]}))
    assert [f["filename"] for f in one["delivered"]] == ["Übersicht.txt"]
    assert "not attachments of this message" in text and "2, 3" in text


async def test_attachments_over_the_inline_cap_are_skipped_with_what_to_do(account: Account) -> None:
    big = os.urandom(INLINE_LIMIT_BYTES + 1)
    uid = append_message(account, message_with(("small.bin", b"tiny"), ("big.bin", big)))
    async with served(account) as client:
        summary = structured(await client.call_tool("get_attachments", {"mailbox": "INBOX", "uid": uid}))
    assert [f["filename"] for f in summary["delivered"]] == ["small.bin"]
    assert [s["filename"] for s in summary["skipped"]] == ["big.bin"]
    assert "IMAP_DOWNLOAD_DIR" in summary["skipped"][0]["reason"]


@pytest.mark.matrix
async def test_files_are_written_whole_and_never_overwritten(account: Account, tmp_path: Path) -> None:
    big = os.urandom(3 * 1024 * 1024 + 17)  # several fetch chunks
    uid = append_message(account, message_with(("photo.png", TINY_PNG), ("data.bin", big)))
    (tmp_path / "photo.png").write_bytes(b"mine, keep it")
    async with served(with_download_dir(account, tmp_path)) as client:
        first = structured(await client.call_tool("get_attachments", {"mailbox": "INBOX", "uid": uid}))
        second = structured(await client.call_tool("get_attachments", {"mailbox": "INBOX", "uid": uid}))
    assert (tmp_path / "photo.png").read_bytes() == b"mine, keep it"
    assert [Path(f["path"]).name for f in first["delivered"]] == ["photo (1).png", "data.bin"]
    assert [Path(f["path"]).name for f in second["delivered"]] == ["photo (2).png", "data (1).bin"]
    assert (tmp_path / "photo (1).png").read_bytes() == TINY_PNG
    assert (tmp_path / "data.bin").read_bytes() == big
    assert first["inline_limit_bytes"] is None


@pytest.mark.parametrize(
    ("name", "written_as"),
    [
        pytest.param("../../escape.txt", "escape.txt", id="parent-dirs"),
        pytest.param("/etc/passwd", "passwd", id="absolute"),
        pytest.param("..\\..\\win.ini", "win.ini", id="backslashes"),
        pytest.param("..", "attachment-2.bin", id="dot-dot"),
        pytest.param(".bashrc", "bashrc", id="hidden"),
        pytest.param("a\tb\x1bc\x7f.txt", "abc.txt", id="control-chars"),
        pytest.param("Übersicht 2026.txt", "Übersicht 2026.txt", id="non-ascii-kept"),
    ],
)
async def test_sender_file_names_cannot_leave_the_download_dir(
    account: Account, tmp_path: Path, name: str, written_as: str
) -> None:
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    uid = append_message(account, message_with((name, b"payload")))
    async with served(with_download_dir(account, downloads)) as client:
        summary = structured(await client.call_tool("get_attachments", {"mailbox": "INBOX", "uid": uid}))
    assert [Path(f["path"]).name for f in summary["delivered"]] == [written_as]
    assert [p.name for p in downloads.iterdir()] == [written_as]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["downloads"]


async def test_a_planted_symlink_is_not_followed(account: Account, tmp_path: Path) -> None:
    downloads, target = tmp_path / "downloads", tmp_path / "victim"
    downloads.mkdir()
    target.write_bytes(b"untouched")
    (downloads / "report.pdf").symlink_to(target)
    uid = append_message(account, message_with(("report.pdf", b"payload")))
    async with served(with_download_dir(account, downloads)) as client:
        summary = structured(await client.call_tool("get_attachments", {"mailbox": "INBOX", "uid": uid}))
    assert Path(summary["delivered"][0]["path"]).name == "report (1).pdf"
    assert target.read_bytes() == b"untouched"


async def test_read_only_hint_is_computed_from_the_download_dir(account: Account, tmp_path: Path) -> None:
    async def annotations(settings: Any) -> dict[str, Any]:
        async with served(settings) as client:
            tool = next(t for t in (await client.list_tools()).tools if t.name == "get_attachments")
        assert tool.title == "Get attachments"
        return tool.annotations.model_dump(by_alias=True, exclude_none=True)  # type: ignore[union-attr]

    assert await annotations(account.settings()) == {
        "title": "Get attachments",
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": True,
    }
    assert await annotations(with_download_dir(account, tmp_path)) == {
        "title": "Get attachments",
        "readOnlyHint": False,
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": True,
    }


async def test_a_stale_or_malformed_id_is_refused(account: Account) -> None:
    async with served(account) as client:
        message_id = await invoice_id(client)
        ref = decode_id(message_id)
        stale = message_id.replace(f".{ref.uidvalidity}.", f".{ref.uidvalidity - 1}.")
        assert "stale" in error_text(await client.call_tool("get_attachments", {"id": stale}))
        assert "not a message id" in error_text(await client.call_tool("get_attachments", {"id": "imap.zz"}))
        bad_part = {"id": message_id, "part_ids": ["../1"]}
        assert "pattern" in error_text(await client.call_tool("get_attachments", bad_part))


class DropsOnPart:
    """A connector whose connections drop (the socket shut down) when `armed` and part `part_id` is fetched (its
    first piece; not its first bytes, which are judged before anything is fetched whole)."""

    def __init__(self, part_id: str) -> None:
        self.item = f"BODY.PEEK[{part_id}]<0.{CHUNK_BYTES}>"
        self.armed = False

    def __call__(self, settings: ImapSettings) -> IMAPClient:
        client = connect(settings)
        command = client._imap._command

        def dropping(name: str, *args: str) -> Any:
            if self.armed and name == "UID" and args[0] == "FETCH" and self.item in args[2]:
                self.armed = False
                client._imap.sock.shutdown(socket.SHUT_RDWR)
            return command(name, *args)

        client._imap._command = dropping
        return client


async def test_a_download_cut_off_by_a_dropped_connection_is_not_run_again(account: Account, tmp_path: Path) -> None:
    """Running it again on a fresh connection would write the first file a second time, as "first (1).bin"."""
    uid = append_message(account, message_with(("first.bin", b"one"), ("second.bin", b"two")))
    drops = DropsOnPart("3")
    pool = ImapPool(account.imap_settings(), connector=drops)
    async with served(with_download_dir(account, tmp_path), pool=pool) as client:
        structured(await client.call_tool("search_messages", {}))  # the connection is now a reused one
        drops.armed = True
        text = error_text(await client.call_tool("get_attachments", {"mailbox": "INBOX", "uid": uid}))
    pool.close_all()
    assert "connection to the IMAP server" in text and "lost" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["first.bin"]


@pytest.mark.slow
async def test_the_download_dir_comes_from_the_environment(account: Account, tmp_path: Path) -> None:
    async with Client(stdio_params(account.env(IMAP_DOWNLOAD_DIR=str(tmp_path)))) as client:
        summary = structured(await client.call_tool("get_attachments", {"id": await invoice_id(client)}))
    assert [Path(f["path"]) for f in summary["delivered"]] == [tmp_path / "invoice.pdf", tmp_path / "Übersicht.txt"]
    assert (tmp_path / "invoice.pdf").read_bytes() == INVOICE


# --- progress and cancellation of a large download, over stdio ---

LARGE = 5 * 1024 * 1024  #: decoded; base64 makes it about 7 MB on the server: several fetch pieces (CHUNK_BYTES)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["inline", "download_dir"])
async def test_a_large_attachment_reports_progress_in_bytes_to_a_client_that_asked(
    account: Account, tmp_path: Path, where: str
) -> None:
    data = os.urandom(LARGE)
    uid = append_message(account, message_with(("large.bin", data)))
    env = account.env(IMAP_DOWNLOAD_DIR=str(tmp_path)) if where == "download_dir" else account.env()
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    notified = ProgressNotifications()
    args = {"mailbox": "INBOX", "uid": uid}
    async with Client(stdio_params(env), message_handler=notified) as client:
        result = await client.call_tool("get_attachments", args, progress_callback=on_progress)
        with_token = len(notified.progress)
        quiet = await client.call_tool("get_attachments", args)  # no progress token: none sent
    assert structured(result)["delivered"] and structured(quiet)["delivered"]
    total = seen[-1][1]
    assert total is not None and total > LARGE and len(seen) > total // CHUNK_BYTES  # encoded: a piece at a time
    assert {t for _, t in seen} == {total} and seen[-1][0] == total
    assert all(earlier < later for (earlier, _), (later, _) in itertools.pairwise(seen))
    assert with_token == len(seen) and len(notified.progress) == with_token
    if where == "inline":
        assert base64.b64decode(result.content[1].resource.blob) == data  # type: ignore[union-attr]
    else:
        assert sorted(p.read_bytes() == data for p in tmp_path.iterdir()) == [True, True]  # "large (1).bin"


@pytest.mark.slow
@pytest.mark.servers("dovecot", reason="the fault proxy reads plain IMAP, which the harness's Dovecot allows")
async def test_a_cancelled_download_stops_and_leaves_no_half_written_file(account: Account, tmp_path: Path) -> None:
    """Cancelled after the first piece, while the second is held at the proxy: the partial file goes, and no file
    ever had the attachment's name."""
    uid = append_message(account, message_with(("large.bin", os.urandom(LARGE))))
    first_piece = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        first_piece.set()

    with FaultProxy(account.server.port) as proxy, ServerLog() as log:
        held = proxy.inject(Fault(f"<{CHUNK_BYTES}.".encode(), "hold", direction="to_server"))
        env = account.env("none", IMAP_PORT=str(proxy.port), IMAP_TIMEOUT="120", IMAP_DOWNLOAD_DIR=str(tmp_path))
        async with Client(stdio_client(stdio_params(env), errlog=log.writer)) as client:
            async with anyio.create_task_group() as calling:
                args = {"mailbox": "INBOX", "uid": uid}
                calling.start_soon(partial(client.call_tool, "get_attachments", args, progress_callback=on_progress))
                await first_piece.wait()
                calling.cancel_scope.cancel()  # the client sends notifications/cancelled
            await log.line("get_attachments: mailbox='INBOX' cancelled by the client")
            held.release()
            stopped = await log.line("stopped by cancellation")
    assert f"uid={uid} stopped by cancellation after {2 * CHUNK_BYTES} of " in stopped
    assert "0 file(s) written whole" in stopped
    assert list(tmp_path.iterdir()) == []
