"""Is an attachment something that runs? Judged by its declared type, its name and its bytes; any one suffices.

Mail is written by strangers, and each of the three can lie: a `.pdf` name on a Windows program, an
`application/pdf` type on a script, a harmless name whose real ending hides behind a right-to-left override
(`invoice\u202efdp.exe` shows as "invoiceexe.pdf"). So an attachment is executable when any one of them says so:

- the declared type is one of `EXECUTABLE_TYPES`, or a macro-enabled Office type;
- the name, with invisible format characters (bidi controls, zero-width spaces) removed and folded (NFKC, so a
  full-width dot is a dot), has any extension of `EXECUTABLE_EXTENSIONS` among all its dotted endings
  (`report.exe.pdf`, `photo.jpg.scr`, `setup.exe.` with the trailing dot Windows drops); a name carrying a
  right-to-left or left-to-right override is held back whatever it ends in (no honest file name needs one);
- the bytes: the signature library `puremagic` names the format from the first bytes (PE, ELF, Mach-O, Windows
  shortcuts, Java classes, Dalvik, …), and `#!/` opens a script for an interpreter (puremagic knows only a few
  interpreters by name). A ZIP container's first bytes are the same for a `.docx` and a `.jar`, so for those its
  entry list decides (read with the standard library's `zipfile`, names only, nothing decompressed): a JAR
  manifest or Java classes, or Office macros (`vbaProject.bin`, Excel 4 macro sheets).

What is not caught: an OLE compound file (`.msi`, legacy `.doc` with macros) shares its first bytes with every
legacy Office document, so only its name or declared type can say it is an installer. An archive is not judged by
what it contains (a ZIP holding an `.exe` does not run itself).

`executable_reason` is a pure function of the three, for the reading tools to hold such parts back; `file_reason`
judges a part already written to a file, reading its start and (for a ZIP) its entry list, never the whole file.
"""

from __future__ import annotations

import codecs
import io
import re
import unicodedata
import zipfile
from pathlib import PurePosixPath
from typing import BinaryIO

import puremagic

#: dotted endings of files that run when opened (Windows, macOS, Unix scripts, Java), and Office files that carry macros
EXECUTABLE_EXTENSIONS = frozenset(
    {
        # Windows programs, libraries, installers, shortcuts, control panel items, screen savers
        "exe", "com", "scr", "pif", "cpl", "dll", "sys", "ocx", "msi", "msp", "mst", "msc", "lnk", "url", "scf",
        "appref-ms", "appx", "msix", "application", "gadget", "reg", "hta", "chm",
        # Windows scripts
        "bat", "cmd", "vbs", "vbe", "js", "jse", "wsf", "wsh", "wsc", "ps1", "psm1", "psd1", "ps1xml", "psc1",
        # macOS, Unix and cross-platform
        "app", "command", "tool", "pkg", "mpkg", "sh", "bash", "csh", "ksh", "zsh", "run", "elf",
        "jar", "class", "jnlp", "py", "pyw", "pl", "rb", "apk", "dex", "appimage",
        # macro-enabled Office
        "docm", "dotm", "xlsm", "xltm", "xlam", "xlsb", "pptm", "potm", "ppsm", "ppam", "sldm",
    }
)  # fmt: skip
#: declared types of programs and scripts; any type with "macroenabled" in it is a macro-enabled Office file
EXECUTABLE_TYPES = frozenset(
    {
        "application/x-msdownload", "application/x-msdos-program", "application/x-dosexec", "application/x-exe",
        "application/exe", "application/x-winexe", "application/vnd.microsoft.portable-executable",
        "application/x-executable", "application/x-elf", "application/x-sharedlib", "application/x-mach-binary",
        "application/x-mach-o-executable", "application/x-msi", "application/x-ms-installer",
        "application/x-ms-shortcut",
        "application/x-sh", "application/x-shellscript", "application/x-csh", "text/x-shellscript", "text/x-sh",
        "application/x-bat", "application/bat", "application/x-msbatch", "text/x-msdos-batch",
        "application/javascript", "application/x-javascript", "text/javascript", "application/ecmascript",
        "text/ecmascript", "text/jscript", "application/x-vbscript", "text/vbscript", "text/x-vbscript",
        "application/x-powershell", "text/x-powershell", "application/hta", "application/x-ms-application",
        "application/java-archive", "application/x-java-archive", "application/x-java-applet",
        "application/x-java-jnlp-file", "application/vnd.android.package-archive", "application/x-apple-diskimage",
        "application/x-python", "text/x-python", "application/x-perl", "text/x-perl", "application/x-ruby",
    }
)  # fmt: skip
#: containers (ZIP, OLE) whose first bytes harmless documents and programs share: where the signature library
#: names one of these among its matches, the first bytes decide nothing
_CONTAINERS = frozenset({"zip", "docx", "xlsx", "pptx", "odt", "ods", "odp", "epub", "doc", "xls", "ppt"})
#: what puremagic calls a format that runs, where it gives it no extension or type of ours
_RUNS = re.compile(r"executable|mach-o|shared librar", re.IGNORECASE)
_OVERRIDES = ("\u202d", "\u202e")  # LEFT-TO-RIGHT OVERRIDE, RIGHT-TO-LEFT OVERRIDE
#: a script for an interpreter named by path (`#!/bin/sh`, `#! /usr/bin/env python3`), after an optional UTF-8 BOM
_SHEBANG = re.compile(rb"(?:\xef\xbb\xbf)?#![ \t]*/")
#: ZIP entries that make a container run or carry macros
_JAR_ENTRIES = re.compile(r"(?:^|/)META-INF/MANIFEST\.MF$|\.class$", re.IGNORECASE)
_MACRO_ENTRIES = re.compile(r"(?:^|/)vbaProject\.bin$|(?:^|/)macrosheets/", re.IGNORECASE)
#: how much of the start is read to tell a text from a binary format; and what no text contains
_TEXT_SAMPLE = 1024
#: how much of the start of a file `file_reason` reads for its signature
_HEAD_BYTES = 64 * 1024
_CONTROLS = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]")
#: what zipfile may raise on a hostile or broken archive
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, NotImplementedError)


def executable_reason(name: str | None, declared_type: str | None, content: bytes = b"") -> str | None:
    """Why an attachment runs (for the model: its declared type, its name, or its bytes say so), or None.

    `content` is the part's decoded bytes: the whole part judges everything; a prefix judges all but ZIP
    containers (their entry list is at the end).
    """
    return by_type(declared_type) or by_name(name) or by_content(content)


def file_reason(name: str | None, declared_type: str | None, file: BinaryIO) -> str | None:
    """`executable_reason` of a part written whole to `file` (readable and seekable): its first bytes, and a ZIP's
    entry list wherever the file ends, without reading it into memory."""
    file.seek(0)
    head = file.read(_HEAD_BYTES)
    return by_type(declared_type) or by_name(name) or by_content(head, file)


def by_type(declared_type: str | None) -> str | None:
    kind = (declared_type or "").split(";", 1)[0].strip().lower()
    if kind in EXECUTABLE_TYPES or "macroenabled" in kind:
        return f"its declared type {kind} is a program, a script or a file with macros"
    return None


def by_name(name: str | None) -> str | None:
    if not name:
        return None
    if any(override in name for override in _OVERRIDES):
        return "its name contains a text direction override, which can hide its real ending"
    for extension in extensions(name):
        if extension in EXECUTABLE_EXTENSIONS:
            return f"its name has the ending .{extension}, which runs when opened"
    return None


def extensions(name: str) -> list[str]:
    """Every dotted ending of `name` as a system reads it (`a.pdf.exe` → pdf, exe): format characters removed,
    folded, lower-cased, trailing dots and spaces dropped (Windows drops them), each ending stripped of spaces."""
    visible = "".join(ch for ch in name if unicodedata.category(ch) != "Cf")
    folded = unicodedata.normalize("NFKC", visible).replace("\\", "/")
    base = PurePosixPath(folded).name if "/" in folded else folded
    base = base.rstrip(". \t").casefold()
    return [ending.strip() for ending in base.split(".")[1:] if ending.strip()]


def by_content(content: bytes, whole: BinaryIO | None = None) -> str | None:
    """What the bytes say: `content` is the part's start (or all of it); `whole`, when given, the whole part, for
    a ZIP's entry list (at its end)."""
    if not content:
        return None
    if _SHEBANG.match(content):
        return "its first bytes start a script (#!)"
    inside = _zip_inside(whole if whole is not None else io.BytesIO(content))
    if inside is not None:
        return inside
    if _text(content[:_TEXT_SAMPLE]):
        return None  # a text's first letters are no signature ("MZ is…", "SELF…"); a script says #!
    try:
        matches = puremagic.magic_string(content)
    except (puremagic.PureError, ValueError):
        return None
    endings = [match.extension.lstrip(".").lower() for match in matches]
    if _CONTAINERS.intersection(endings):
        return None  # ZIP or OLE: the same first bytes for harmless documents and for programs; the inside decides
    for match, extension in zip(matches, endings, strict=True):
        if extension in EXECUTABLE_EXTENSIONS or by_type(match.mime_type) or _RUNS.search(match.name):
            return f"its bytes are those of a {match.name.strip()}, which runs"
    return None


def _text(sample: bytes) -> bool:
    """Whether `sample` reads as UTF-8 text: no control characters but white space (a character cut at the end is
    allowed)."""
    try:
        text = codecs.getincrementaldecoder("utf-8")(errors="strict").decode(sample, final=False)
    except UnicodeDecodeError:
        return False
    return not _CONTROLS.search(text)


def _zip_inside(source: BinaryIO) -> str | None:
    """For a readable ZIP (wherever its directory is: also one appended to an image), what its entries make of it."""
    try:
        with zipfile.ZipFile(source) as archive:
            names = archive.namelist()
    except _ZIP_ERRORS:
        return None
    if any(_JAR_ENTRIES.search(entry) for entry in names):
        return "it is a Java archive (a manifest or Java classes inside), which runs"
    if any(_MACRO_ENTRIES.search(entry) for entry in names):
        return "it is an Office document with macros inside"
    return None
