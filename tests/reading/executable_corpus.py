"""Files that run when opened, and files that do not, as bytes: the executable detector's corpus, and the mail the
reading tools are tested with (`test_executables.py`, `test_held_back.py`)."""

from __future__ import annotations

import io
import zipfile

#: the first bytes of programs, as their formats define them (a DOS stub with its PE header; ELF; Mach-O; a shortcut)
PE = (
    b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00\xb8" + b"\x00" * 43 + b"\x80\x00\x00\x00"
    + b"\x00" * 64 + b"PE\x00\x00\x4c\x01" + b"\x00" * 200
)  # fmt: skip
ELF = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 8 + b"\x02\x00\x3e\x00" + b"\x00" * 100
MACH_O = b"\xcf\xfa\xed\xfe\x07\x00\x00\x01" + b"\x00" * 100
MACH_O_32 = b"\xfe\xed\xfa\xce" + b"\x00" * 100
LNK = b"L\x00\x00\x00\x01\x14\x02\x00\x00\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00F" + b"\x00" * 60
JAVA_CLASS = b"\xca\xfe\xba\xbe\x00\x00\x00\x34" + b"\x00" * 40
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 64
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n"
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01" + b"\x00" * 64
GZIP = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03" + b"\x00" * 32


def zipped(*entries: str, stored: bytes = b"x" * 64) -> bytes:
    """A ZIP holding `entries`, each with `stored` as its bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry in entries:
            archive.writestr(entry, stored)
    return buffer.getvalue()


JAR = zipped("META-INF/MANIFEST.MF", "com/example/Main.class")
DOCM = zipped("[Content_Types].xml", "word/document.xml", "word/vbaProject.bin")
XLSM_XLM = zipped("[Content_Types].xml", "xl/workbook.xml", "xl/macrosheets/sheet1.xml")
DOCX = zipped("[Content_Types].xml", "_rels/.rels", "word/document.xml")
XLSX = zipped("[Content_Types].xml", "xl/workbook.xml", "xl/worksheets/sheet1.xml")
ZIP_OF_TEXTS = zipped("notes.txt", "minutes/2026-01.txt")

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def padded_jar(size: int = 64 * 1024) -> bytes:
    """A JAR whose entry list (at its end) lies `size` bytes in: its first bytes are any ZIP's, so only every byte
    tells it runs."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("data/readme.txt", bytes(range(256)) * (size // 256))
        archive.writestr("META-INF/MANIFEST.MF", b"Manifest-Version: 1.0\r\nMain-Class: Main\r\n")
        archive.writestr("Main.class", JAVA_CLASS)
    return buffer.getvalue()


#: HTML and SVG that act when opened, and that do not
HTML_SCRIPT = b"<!doctype html><html><body><p>Invoice</p><script>location='https://evil.example'</script></body></html>"
SVG_ONLOAD = b'<svg xmlns="http://www.w3.org/2000/svg" onload="fetch(\'https://evil.example\')"><rect/></svg>'
HTML_PLAIN = b"<!doctype html><html><body><h1>Minutes</h1><p>Based on the vote, we go on.</p></body></html>"
SVG_PLAIN = b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'
