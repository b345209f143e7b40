"""Tiny binary payloads for the image, audio and blob fixtures, built at import time.

The suite only checks that the data is base64 with the right MIME type, so a 1x1 PNG and a
two-sample WAV are enough; building them here keeps opaque blobs out of the source.
"""

from __future__ import annotations

import base64
import io
import struct
import wave
import zlib


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def _one_pixel_png() -> bytes:
    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # 1x1, 8-bit RGBA
    pixels = zlib.compress(b"\x00\x2a\x7f\xd4\xff")  # filter byte + one pixel
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", pixels) + _png_chunk(b"IEND", b"")


def _silent_wav() -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(8000)
        wav.writeframes(b"\x00\x00\x00\x00")
    return buffer.getvalue()


PNG_BYTES = _one_pixel_png()
PNG_BASE64 = base64.b64encode(PNG_BYTES).decode("ascii")
WAV_BASE64 = base64.b64encode(_silent_wav()).decode("ascii")
