"""Is an attachment active content: something that runs, installs or mounts when opened? Any one sign suffices.

Mail is written by strangers, and each of name, declared type and bytes can lie: a `.pdf` name on a Windows program,
an `application/pdf` type on a script, a harmless name whose real ending hides behind a right-to-left override
(`invoice\u202efdp.exe` shows as "invoiceexe.pdf"). So an attachment is active when any one rule says so, and the
reason given names the rule:

- `declared-type`: the declared type is one of `executable_types.EXECUTABLE_TYPES`, or a macro-enabled Office type;
- `name-ending`: the name, with invisible format characters (bidi controls, zero-width spaces) removed and folded
  (NFKC, so a full-width dot is a dot), has an ending of `executable_types.EXECUTABLE_EXTENSIONS` (what Windows,
  macOS and Linux run, install or mount on open, and every ending Gmail and Outlook block; see that module) among
  all its dotted endings (`report.exe.pdf`, `photo.jpg.scr`, `setup.exe.` with the trailing dot Windows drops;
  an ending that is an ordinary word too, `LAST_ONLY`, only as the last one);
- `direction-override`: the name carries a right-to-left or left-to-right override, whatever it ends in (no
  honest file name needs one);
- `script-signature` and `program-signature`: the bytes. `#!/` opens a script for an interpreter; the signature
  library `puremagic` names the format from the first bytes (PE, ELF, Mach-O, Windows shortcuts, Java classes,
  Dalvik, …);
- `java-archive`, `office-macros`, `archive-content`: a ZIP container's first bytes are the same for a `.docx`, a
  `.jar` and an archive of programs, so its entry list decides (read with the standard library's `zipfile`, names
  and permissions only, nothing decompressed): a JAR manifest or Java classes, Office macros (`vbaProject.bin`,
  Excel 4 macro sheets), or an entry that is active by its name (any folder or file of its path, so a zipped
  `Setup.app/` counts) or marked executable for Unix (macOS and Linux run such a file on a double click).
  `archive-too-long`: a listing of more than `MAX_LISTED_ENTRIES` entries is not read (it costs memory per entry)
  and the archive is held back;
- `active-markup`: HTML, SVG or XML with script, event handlers, `javascript:` links or embedded documents
  (`active_markup.py`).

What is not caught: an OLE compound file (`.msi`, legacy `.doc` with macros) shares its first bytes with every
legacy Office document, so only its name or declared type can say it is an installer; archives other than ZIP
(RAR, 7z, tar, an ISO is held back by its name), a ZIP inside a ZIP, and what a document does once opened in its
own program (PDF scripts, Office templates fetched from elsewhere).

`executable_reason` is a pure function of the three, for the reading tools to hold such parts back; `file_reason`
judges a part already written to a file, reading its start, (for a ZIP) its entry list, and (for markup) at most
`MAX_MARKUP_BYTES` of it, never more.
"""

from __future__ import annotations

import codecs
import io
import re
import struct
import unicodedata
import zipfile
from pathlib import PurePosixPath
from typing import BinaryIO

import puremagic

from .active_markup import MAX_MARKUP_BYTES, is_markup, markup_reason
from .executable_types import EXECUTABLE_EXTENSIONS, EXECUTABLE_TYPES, EXTENSION_KINDS, LAST_ONLY

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
#: the most entries of a ZIP listing read (zipfile keeps an object of some hundred bytes for each); a longer one is
#: held back unread
MAX_LISTED_ENTRIES = 10_000
#: ZIP's end of central directory record (and its ZIP64 locator and record): where the entry count stands
_END = b"PK\x05\x06"
_END_SIZE = 22
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_LOCATOR_SIZE = 20
_ZIP64_END = b"PK\x06\x06"
_ZIP64_END_SIZE = 56
#: the signature of each entry of a ZIP's listing
_LISTED = b"PK\x01\x02"
#: a Unix mode's execute bits, and zipfile's number of the Unix system that sets them
_EXECUTE_BITS = 0o111
_UNIX = 3


def executable_reason(name: str | None, declared_type: str | None, content: bytes = b"") -> str | None:
    """Why an attachment is active content (the rule, and what its declared type, name or bytes say), or None.

    `content` is the part's decoded bytes: the whole part judges everything; a prefix judges all but ZIP
    containers (their entry list is at the end) and markup past it.
    """
    return (
        by_type(declared_type)
        or by_name(name)
        or by_content(content)
        or by_markup(name, declared_type, content, content)
    )


def file_reason(name: str | None, declared_type: str | None, file: BinaryIO) -> str | None:
    """`executable_reason` of a part written whole to `file` (readable and seekable): its first bytes, a ZIP's
    entry list wherever the file ends, and markup up to `MAX_MARKUP_BYTES`, without reading more into memory."""
    file.seek(0)
    head = file.read(_HEAD_BYTES)
    if (reason := by_type(declared_type) or by_name(name) or by_content(head, file)) is not None:
        return reason
    if not is_markup(extensions(name or ""), declared_type, head):
        return None
    file.seek(0)
    return markup_reason(file.read(MAX_MARKUP_BYTES + 1))


def by_type(declared_type: str | None) -> str | None:
    kind = (declared_type or "").split(";", 1)[0].strip().lower()
    if kind in EXECUTABLE_TYPES:
        return f"rule declared-type: its declared type {kind} is a program, a script, an installer or a disk image"
    if "macroenabled" in kind:  # the sender's words beyond that: not repeated
        return "rule declared-type: its declared type names a macro-enabled Office file"
    return None


def by_name(name: str | None) -> str | None:
    if not name:
        return None
    if any(override in name for override in _OVERRIDES):
        return "rule direction-override: its name contains a text direction override, which can hide its real ending"
    ending = active_ending(extensions(name))
    if ending is not None:
        return f"rule name-ending: its name has the ending .{ending}, {EXTENSION_KINDS[ending]}"
    return None


def active_ending(endings: list[str]) -> str | None:
    """The first of a name's `endings` that runs, installs or mounts when opened (one of `LAST_ONLY` only last)."""
    last = len(endings) - 1
    for position, ending in enumerate(endings):
        if ending in EXECUTABLE_EXTENSIONS and (position == last or ending not in LAST_ONLY):
            return ending
    return None


def by_markup(name: str | None, declared_type: str | None, start: bytes, data: bytes) -> str | None:
    """For markup (by name, declared type or a first `<` of `start`): what in `data` (the part, or as much of it as
    is read) acts when opened (`active_markup.py`)."""
    if not data or not is_markup(extensions(name or ""), declared_type, start):
        return None
    return markup_reason(data)


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
        return "rule script-signature: its first bytes start a script (#!)"
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
            return f"rule program-signature: its bytes are those of a {match.name.strip()}, which runs"
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
    count = listed_entries(source)
    if count is None:
        return None
    if count > MAX_LISTED_ENTRIES:
        return (
            f"rule archive-too-long: it is a ZIP archive of {count} entries, more than the {MAX_LISTED_ENTRIES} "
            "whose names are checked for programs"
        )
    try:
        with zipfile.ZipFile(source) as archive:
            entries = archive.infolist()
    except _ZIP_ERRORS:
        return None
    names = [entry.filename for entry in entries]
    if any(_JAR_ENTRIES.search(name) for name in names):
        return "rule java-archive: it is a Java archive (a manifest or Java classes inside), which runs"
    if any(_MACRO_ENTRIES.search(name) for name in names):
        return "rule office-macros: it is an Office document with macros inside"
    return next(filter(None, map(_active_entry, entries)), None)


def _active_entry(entry: zipfile.ZipInfo) -> str | None:
    """Why an entry of a ZIP is active content: its path's names (any folder or the file) or its Unix mode."""
    for part in entry.filename.replace("\\", "/").split("/"):
        if any(override in part for override in _OVERRIDES):
            return "rule archive-content: it is a ZIP archive holding a file whose name has a text direction override"
        ending = active_ending(extensions(part))
        if ending is not None:
            kind = EXTENSION_KINDS[ending]
            return f"rule archive-content: it is a ZIP archive holding a file ending in .{ending}, {kind}"
    if entry.create_system == _UNIX and not entry.is_dir() and (entry.external_attr >> 16) & _EXECUTE_BITS:
        return "rule archive-content: it is a ZIP archive holding a file marked executable, which macOS and Linux run"
    return None


def listed_entries(source: BinaryIO) -> int | None:
    """How many entries a ZIP's listing holds, as its end record (or ZIP64 end record) says, read from the last
    64 KiB; None when it is no ZIP (no end record, or none whose listing starts where it says)."""
    size = source.seek(0, io.SEEK_END)
    start = max(0, size - (_END_SIZE + 0xFFFF + _ZIP64_LOCATOR_SIZE + _ZIP64_END_SIZE))
    source.seek(start)
    tail = source.read()
    end = tail.rfind(_END)
    if end < 0 or len(tail) - end < _END_SIZE:
        return None
    count, listing_size = struct.unpack_from("<HL", tail, end + 10)
    locator, record = end - _ZIP64_LOCATOR_SIZE, end - _ZIP64_LOCATOR_SIZE - _ZIP64_END_SIZE
    if record >= 0 and tail[locator : locator + 4] == _ZIP64_LOCATOR and tail[record : record + 4] == _ZIP64_END:
        count, listing_size = struct.unpack_from("<QQ", tail, record + 32)
        end = record
    listing = start + end - listing_size
    if listing < 0:
        return None
    source.seek(listing)
    found = source.read(4) == _LISTED or count == listing_size == 0
    source.seek(0)
    return int(count) if found else None
