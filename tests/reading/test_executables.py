"""The executable detector against a corpus of disguises (held back) and of ordinary files (not held back)."""

from __future__ import annotations

import io
import sys

import pytest
from executable_corpus import (
    DOCM,
    DOCX,
    DOCX_TYPE,
    ELF,
    GZIP,
    JAR,
    JAVA_CLASS,
    JPEG,
    LNK,
    MACH_O,
    MACH_O_32,
    PDF,
    PE,
    PNG,
    XLSM_XLM,
    XLSX,
    ZIP_OF_TEXTS,
    padded_jar,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from imap_mcp.server.reading.executables import executable_reason, extensions, file_reason

HELD_BACK = [
    # extension tricks
    pytest.param("setup.exe", "application/octet-stream", b"", id="plain-exe-name"),
    pytest.param("invoice.pdf.exe", "application/pdf", PDF, id="double-extension-exe-last"),
    pytest.param("invoice.exe.pdf", "application/pdf", PDF, id="double-extension-exe-inside"),
    pytest.param("photo.jpg.scr", "image/jpeg", JPEG, id="screen-saver-behind-jpg"),
    pytest.param("INVOICE.PDF.JS", "application/pdf", b"", id="upper-case-js"),
    pytest.param("report.pdf                       .vbs", "application/pdf", b"", id="spaces-before-vbs"),
    pytest.param("setup.exe.", "application/octet-stream", b"", id="trailing-dot"),
    pytest.param("setup.exe   ", "application/octet-stream", b"", id="trailing-spaces"),
    pytest.param("run\uff0ebat", "text/plain", b"", id="full-width-dot"),
    pytest.param("run.b\u200bat", "text/plain", b"", id="zero-width-space-in-ending"),
    pytest.param("C:\\Users\\x\\start.cmd", "text/plain", b"", id="windows-path"),
    pytest.param("clean-up.ps1", "text/plain", b"Remove-Item -Recurse C:\\\n", id="powershell"),
    pytest.param("link.lnk", None, b"", id="shortcut-name"),
    pytest.param("tool.jar", "application/zip", b"", id="jar-name"),
    pytest.param("install.msi", "application/octet-stream", b"", id="msi-name"),
    pytest.param("Calculator.app", "application/zip", b"", id="mac-app-name"),
    pytest.param("budget.xlsm", "application/vnd.ms-excel", b"", id="macro-workbook-name"),
    pytest.param("letter.docm", None, b"", id="macro-document-name"),
    # right-to-left override: "invoice\u202efdp.exe" shows as "invoiceexe.pdf"
    pytest.param("invoice\u202efdp.exe", "application/pdf", PDF, id="rlo-hides-exe"),
    pytest.param("photo\u202egnp.scr", "image/png", PNG, id="rlo-hides-scr"),
    pytest.param("summary\u202etxt.pdf", "application/pdf", PDF, id="rlo-anywhere"),
    pytest.param("a\u202dexe.txt", "text/plain", b"hello", id="ltr-override"),
    # declared types that say it runs, under harmless names
    pytest.param("notes.txt", "application/x-msdownload", b"", id="declared-msdownload"),
    pytest.param("notes.txt", "APPLICATION/X-SH; charset=utf-8", b"", id="declared-shell-with-params"),
    pytest.param("data.csv", "application/javascript", b"", id="declared-javascript"),
    pytest.param("file", "application/vnd.ms-excel.sheet.macroEnabled.12", b"", id="declared-macro-enabled"),
    pytest.param("file", "application/java-archive", b"", id="declared-jar"),
    # magic bytes under a harmless name, and types that lie
    pytest.param("invoice.pdf", "application/pdf", PE, id="pe-as-pdf"),
    pytest.param("photo.jpg", "image/jpeg", ELF, id="elf-as-jpg"),
    pytest.param("notes.txt", "text/plain", MACH_O, id="mach-o-as-txt"),
    pytest.param("notes", "text/plain", MACH_O_32, id="mach-o-32-no-name"),
    pytest.param("readme.txt", "text/plain", b"#!/bin/sh\nrm -rf ~\n", id="shell-script-as-txt"),
    pytest.param("readme.txt", "text/plain", b"\xef\xbb\xbf#! /usr/bin/env python3\nprint(1)\n", id="bom-shebang"),
    pytest.param("document.pdf", "application/pdf", LNK, id="shortcut-as-pdf"),
    pytest.param("data.bin", "application/octet-stream", JAVA_CLASS, id="java-class"),
    pytest.param("report.zip", "application/zip", JAR, id="jar-as-zip"),
    pytest.param("report.docx", DOCX_TYPE, DOCM, id="docm-as-docx"),
    pytest.param("sheet.xlsx", "application/vnd.ms-excel", XLSM_XLM, id="xlm-macros-as-xlsx"),
    pytest.param("image.png", "image/png", PNG + JAR, id="jar-appended-to-png"),
    pytest.param(None, None, PE, id="pe-without-name-or-type"),
    pytest.param("ls", "application/octet-stream", open(sys.executable, "rb").read(4096), id="this-python"),  # noqa: SIM115
]

HARMLESS = [
    pytest.param("report.pdf", "application/pdf", PDF, id="pdf"),
    pytest.param("photo.png", "image/png", PNG, id="png"),
    pytest.param("photo.jpeg", "image/jpeg", JPEG, id="jpeg"),
    pytest.param("letter.docx", DOCX_TYPE, DOCX, id="docx"),
    pytest.param("sheet.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", XLSX, id="xlsx"),
    pytest.param("archive.zip", "application/zip", ZIP_OF_TEXTS, id="zip-of-texts"),
    pytest.param("backup.tar.gz", "application/gzip", GZIP, id="tar-gz"),
    pytest.param("notes.txt", "text/plain", b"MZ is where the meeting is.\n", id="text-starting-with-MZ"),
    pytest.param("notes.txt", "text/plain", b"SELF-ASSESSMENT\n", id="text-starting-with-ELF-at-1"),
    pytest.param("notes.md", "text/markdown", b"# Title\n\n#!important but not a script\n", id="markdown"),
    pytest.param("data.csv", "text/csv", "name,city\nJosé,Zürich\n".encode(), id="csv-utf8"),
    pytest.param("v1.2.3-release-notes.txt", "text/plain", b"fixes\n", id="dotted-version-name"),
    pytest.param("\u05d3\u05d5\u05d7.pdf", "application/pdf", PDF, id="hebrew-name"),
    pytest.param(None, None, b"", id="nothing-known"),
    pytest.param("calendar.ics", "text/calendar", b"BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n", id="ics"),
    pytest.param("broken.zip", "application/zip", b"PK\x03\x04" + b"\x00" * 40, id="broken-zip"),
]


@pytest.mark.parametrize(("name", "declared", "content"), HELD_BACK)
def test_a_disguised_executable_is_held_back(name: str | None, declared: str | None, content: bytes) -> None:
    assert executable_reason(name, declared, content) is not None


@pytest.mark.parametrize(("name", "declared", "content"), HARMLESS)
def test_a_harmless_file_is_not_held_back(name: str | None, declared: str | None, content: bytes) -> None:
    assert executable_reason(name, declared, content) is None


def test_the_reason_names_what_gave_it_away() -> None:
    assert "declared type application/x-msdownload" in (executable_reason("a.txt", "application/x-msdownload") or "")
    assert ".exe" in (executable_reason("a.pdf.exe", "application/pdf") or "")
    assert "override" in (executable_reason("a\u202efdp.exe", None) or "")
    assert "Windows" in (executable_reason("a.pdf", "application/pdf", PE) or "")
    assert "Java archive" in (executable_reason("a.zip", "application/zip", JAR) or "")
    assert "macros" in (executable_reason("a.docx", None, DOCM) or "")


def test_a_file_is_judged_by_its_start_and_a_zip_by_its_entry_list_at_its_end() -> None:
    """A part written to a file is judged without reading it whole; a JAR's first bytes are any ZIP's."""
    jar = padded_jar()
    assert executable_reason("report.zip", "application/zip", jar[:4096]) is None
    assert "Java archive" in (file_reason("report.zip", "application/zip", io.BytesIO(jar)) or "")
    assert "Windows" in (file_reason("invoice.pdf", "application/pdf", io.BytesIO(PE)) or "")
    assert file_reason("letter.docx", DOCX_TYPE, io.BytesIO(DOCX)) is None
    assert ".exe" in (file_reason("a.pdf.exe", "application/pdf", io.BytesIO(PDF)) or "")


def test_every_ending_of_a_name_is_read() -> None:
    assert extensions("Invoice.PDF.exe. ") == ["pdf", "exe"]
    assert extensions("a\u202efdp.exe") == ["exe"]
    assert extensions("dir/x.tar.gz") == ["tar", "gz"]
    assert extensions("README") == []


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.text(max_size=40)), st.one_of(st.none(), st.text(max_size=40)), st.binary(max_size=600))
def test_any_input_gets_an_answer(name: str | None, declared: str | None, content: bytes) -> None:
    reason = executable_reason(name, declared, content)
    assert reason is None or isinstance(reason, str)


@settings(max_examples=200, deadline=None)
@given(cut=st.integers(min_value=0, max_value=len(JAR)), noise=st.binary(max_size=64))
def test_a_cut_or_corrupted_archive_gets_an_answer(cut: int, noise: bytes) -> None:
    reason = executable_reason("a.zip", "application/zip", JAR[:cut] + noise + JAR[cut + len(noise) :])
    assert reason is None or isinstance(reason, str)
