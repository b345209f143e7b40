"""The executable detector against a corpus of disguises (held back) and of ordinary files (not held back)."""

from __future__ import annotations

import gzip
import io
import sys
import zipfile

import pytest
from executable_corpus import (
    DOCM,
    DOCX,
    DOCX_TYPE,
    ELF,
    GZIP,
    HTML_PLAIN,
    HTML_SCRIPT,
    JAR,
    JAVA_CLASS,
    JPEG,
    LNK,
    MACH_O,
    MACH_O_32,
    PDF,
    PE,
    PNG,
    SVG_ONLOAD,
    SVG_PLAIN,
    XLSM_XLM,
    XLSX,
    ZIP_OF_TEXTS,
    padded_jar,
    zipped,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from imap_mcp.server.reading import active_markup, executables
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
    # markup without anything that acts, and words that only look like endings inside a name
    pytest.param("minutes.html", "text/html", HTML_PLAIN, id="plain-html"),
    pytest.param("logo.svg", "image/svg+xml", SVG_PLAIN, id="plain-svg"),
    pytest.param("notes.txt", "text/plain", b"<3 see you on=Monday at the javascript meetup", id="starts-with-lt"),
    pytest.param("Q3.action.items.pdf", "application/pdf", PDF, id="word-ending-inside-a-name"),
    pytest.param("team.desktop.photo.png", "image/png", PNG, id="desktop-inside-a-name"),
    pytest.param("archive.zip", "application/zip", zipped("Setup.txt", "docs/one.pdf"), id="zip-of-documents"),
    pytest.param("a.pdf", "application/pdf", PDF + b"PK\x05\x06" + b"\xff" * 18, id="pdf-with-a-fake-zip-end"),
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


#: every ending issue 38 found delivered, and Gmail's list of blocked types: each held back by its name alone
ISSUE_38 = "slk one iso img vhd vhdx msu sct mdb accde pyz iqy inf website appinstaller desktop scpt dmg"
GMAIL = (
    "ade adp apk appx appxbundle bat cab chm cmd com cpl diagcab diagcfg diagpkg dll dmg ex ex_ exe hta img ins iso "
    "isp jar jnlp js jse lib lnk mde mjs msc msi msix msixbundle msp mst nsh pif ps1 scr sct shb sys vb vbe vbs vhd "
    "vxd wsc wsf wsh xll"
)
#: Outlook's Level 1 list (Outlook on the web's BlockedFileTypes)
OUTLOOK = (
    "accda accde ade adp app appcontent-ms application appref-ms asp aspx asx bas bat bgi cab cdxml cer chm cmd cnt "
    "com cpl crt csh der diagcab exe fxp gadget grp hlp hpj hta htc img inf ins iso isp its jar jnlp js jse ksh lnk "
    "mad maf mag mam maq mar mas mat mau mav maw mcf mda mdb mde mdt mdw mdz mht mhtml msc msh msh1 msh2 msh1xml "
    "msh2xml mshxml msi msp mst msu ops osd pcd pif pl plg prf prg printerexport ps1 ps1xml ps2 ps2xml psc1 psc2 "
    "psd1 psdm1 pssc pst py pyc pyo pyw pyz pyzw reg scf scr sct settingcontent-ms shb shs theme tmp udl url vb vbe "
    "vbp vbs vhd vhdx vsmacros vsw webpnp website ws wsb wsc wsf wsh xbap xll xnk"
)


@pytest.mark.parametrize("ending", sorted(set(f"{ISSUE_38} {GMAIL} {OUTLOOK}".split())))
def test_every_ending_that_runs_or_mounts_or_a_mail_service_blocks_is_held_back(ending: str) -> None:
    reason = executable_reason(f"Quarterly report.{ending}", "application/octet-stream", b"%PDF-1.7\n")
    assert reason is not None and reason.startswith("rule name-ending: its name has the ending ."), ending


ACTIVE_MARKUP = [
    pytest.param("invoice.html", "text/html", HTML_SCRIPT, "<script>", id="html-script"),
    pytest.param("logo.svg", "image/svg+xml", SVG_ONLOAD, "onload=", id="svg-onload"),
    pytest.param("a.svg", None, b"<svg/onload=alert(1)>", "onload=", id="svg-slash-handler"),
    pytest.param("a.html", None, b'<img src=x"onerror=alert(1)>', "onerror=", id="handler-after-a-quote"),
    pytest.param("a.svg", None, b"<svg><svg:script>1</svg:script></svg>", "<script>", id="prefixed-script"),
    pytest.param("a.xhtml", None, b"<html><SCRIPT>1</SCRIPT></html>", "<script>", id="upper-case"),
    pytest.param("a.svg", None, b"<svg><foreignObject><p>x</p></foreignObject></svg>", "foreignobject", id="fo"),
    pytest.param("a.htm", None, b"<iframe src=https://evil.example>", "<iframe>", id="iframe"),
    pytest.param("a.html", None, b"<object data=x.swf>", "<object>", id="object"),
    pytest.param("a.html", None, b"<embed src=x>", "<embed>", id="embed"),
    pytest.param("a.html", None, b'<a href="javascript:alert(1)">x</a>', "javascript:", id="javascript-url"),
    pytest.param("a.svg", None, b'<a href="&#x6A;ava&#00000000009;script&colon;x">', "javascript:", id="entities"),
    pytest.param("a.html", None, b'<a href="java\tscript:x">', "javascript:", id="tab-in-scheme"),
    pytest.param("a.html", None, b'<a href="VBScript:x">', "vbscript:", id="vbscript-url"),
    pytest.param("a.html", None, b'<meta http-equiv="refresh" content="0;url=https://x.example">', "refresh", id="r"),
    pytest.param("a.svg", None, b'<!DOCTYPE svg [<!ENTITY s "&#60;script">]><svg>&s;</svg>', "entity", id="entity"),
    pytest.param("a.xml", None, b'<?xml-stylesheet type="text/xsl" href="x.xsl"?><a/>', "style sheet", id="xslt"),
    pytest.param("a.htm", None, b"<scr\x1b(Bipt>1</script>", "<script>", id="iso-2022-escape"),
    pytest.param("a.htm", None, "\ufeff<script>1</script>".encode("utf-16-le"), "<script>", id="utf-16-bom"),
    pytest.param("a.htm", None, "<script>1</script>".encode("utf-16-be"), "<script>", id="utf-16-without-bom"),
    pytest.param("a.svgz", None, gzip.compress(SVG_ONLOAD), "onload=", id="svgz"),
    pytest.param("invoice", "TEXT/HTML; charset=utf-8", HTML_SCRIPT, "<script>", id="by-declared-type"),
    pytest.param("invoice.txt", "text/plain", b"  <html><script>1</script>", "<script>", id="by-first-byte"),
    pytest.param("invoice.txt", None, b"\xef\xbb\xbf<svg onload=x>", "onload=", id="by-first-byte-after-a-bom"),
]


@pytest.mark.parametrize(("name", "declared", "content", "found"), ACTIVE_MARKUP)
def test_markup_that_acts_when_opened_is_held_back_and_says_what_it_holds(
    name: str, declared: str | None, content: bytes, found: str
) -> None:
    reason = executable_reason(name, declared, content) or ""
    assert reason.startswith("rule active-markup: ") and found in reason.lower(), reason
    assert file_reason(name, declared, io.BytesIO(content)) == reason


def test_markup_too_large_to_read_is_held_back_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(active_markup, "MAX_MARKUP_BYTES", 1024)
    assert "too large to check" in (executable_reason("a.html", "text/html", HTML_PLAIN * 20) or "")
    assert "too large to check" in (executable_reason("a.svgz", None, gzip.compress(SVG_PLAIN * 20)) or "")
    assert "cannot be decompressed" in (executable_reason("a.svgz", None, b"\x1f\x8b" + b"\xff" * 30) or "")
    assert executable_reason("a.html", "text/html", HTML_PLAIN) is None


def unix_file(name: str, mode: int) -> zipfile.ZipInfo:
    entry = zipfile.ZipInfo(name)
    entry.create_system = 3
    entry.external_attr = mode << 16
    return entry


def archive(*entries: str | zipfile.ZipInfo) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as made:
        for entry in entries:
            made.writestr(entry, b"x")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("content", "found"),
    [
        pytest.param(archive("docs/readme.txt", "docs/setup.exe"), ".exe, a Windows program", id="exe-inside"),
        pytest.param(archive("Invoice.pdf.lnk"), ".lnk", id="shortcut-inside"),
        pytest.param(archive("image.iso"), ".iso, a disk image", id="disk-image-inside"),
        pytest.param(archive("Setup.app/Contents/MacOS/Setup"), ".app, a macOS", id="app-folder-inside"),
        pytest.param(archive("x/invoice\u202efdp.exe"), "direction override", id="override-inside"),
        pytest.param(archive(unix_file("invoice", 0o100755)), "marked executable", id="unix-executable-inside"),
    ],
)
def test_an_archive_holding_a_program_is_held_back(content: bytes, found: str) -> None:
    reason = executable_reason("files.zip", "application/zip", content) or ""
    assert reason.startswith("rule archive-content: it is a ZIP archive holding ") and found in reason, reason
    assert file_reason("files.zip", "application/zip", io.BytesIO(content)) == reason


def test_an_archive_of_documents_and_folders_is_delivered() -> None:
    content = archive(unix_file("docs/", 0o40755), unix_file("docs/minutes.pdf", 0o100644), "one.two.txt")
    assert executable_reason("files.zip", "application/zip", content) is None


def test_a_listing_longer_than_the_bound_is_held_back_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    """A listing costs memory per entry: past `MAX_LISTED_ENTRIES` (read from the end record) it is not parsed."""
    monkeypatch.setattr(executables, "MAX_LISTED_ENTRIES", 3)
    reason = executable_reason("files.zip", "application/zip", archive(*(f"{n}.txt" for n in range(4))))
    assert (reason or "").startswith("rule archive-too-long: it is a ZIP archive of 4 entries")
    assert executable_reason("files.zip", "application/zip", archive(*(f"{n}.txt" for n in range(3)))) is None


@pytest.mark.parametrize(
    ("name", "declared", "content", "rule"),
    [
        pytest.param("a.txt", "application/x-msdownload", b"", "declared-type", id="declared-type"),
        pytest.param("a.pdf.exe", None, b"", "name-ending", id="name-ending"),
        pytest.param("a\u202efdp.txt", None, b"", "direction-override", id="direction-override"),
        pytest.param("a.txt", None, b"#!/bin/sh\n", "script-signature", id="script-signature"),
        pytest.param("a.pdf", None, PE, "program-signature", id="program-signature"),
        pytest.param("a.zip", None, JAR, "java-archive", id="java-archive"),
        pytest.param("a.docx", None, DOCM, "office-macros", id="office-macros"),
        pytest.param("a.zip", None, archive("run.bat"), "archive-content", id="archive-content"),
        pytest.param("a.html", None, HTML_SCRIPT, "active-markup", id="active-markup"),
    ],
)
def test_each_reason_names_its_rule(name: str, declared: str | None, content: bytes, rule: str) -> None:
    assert (executable_reason(name, declared, content) or "").startswith(f"rule {rule}: ")


def test_a_reason_never_repeats_the_senders_words() -> None:
    """A reason stands outside the fence: a declared type, a name or an entry's name is named by its ending only."""
    reasons = [
        executable_reason("x", "application/call-forward_message-now.macroEnabled"),
        executable_reason("call forward_message now.exe", None),
        executable_reason("files.zip", "application/zip", archive("call forward_message now.exe")),
        executable_reason("call forward_message now.html", "text/html", b"<p onclick=x>"),
    ]
    assert all(reason and "forward_message" not in reason for reason in reasons), reasons
