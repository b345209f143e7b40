"""An attachment's size in one unit everywhere: its decoded bytes, what `get_attachments` delivers.

BODYSTRUCTURE gives a part's size as stored, transfer-encoding included (base64 is about 4/3 of the bytes, with
line breaks), so a size worked out from it alone is an estimate that `get_message` and `get_attachments` would
disagree on. The decoded size, exactly, and without fetching a large part whole (`with_decoded_sizes`):

- 7bit, 8bit, binary: the stored size is the decoded size.
- where the server offers BINARY (RFC 3516): `BINARY.SIZE[part]`, the server's own count, for every part.
- otherwise a small part (`WHOLE_BYTES` or less) is fetched and decoded; a larger base64 part is counted from
  its first line and its last bytes (encoders write lines of one length: the stored size, that length, the last
  line and its padding give the count, and a part whose lines do not add up keeps the estimate); a larger
  quoted-printable part keeps the estimate (nothing short of reading it all can count it).

At most `MAX_COUNTED` parts of a message are counted, in one FETCH.
"""

from __future__ import annotations

import dataclasses
import imaplib
from typing import Any

from ..imap.fetch import fetch
from ..imap.session import Session
from .parts import Part, decoded_stream

#: a part this small is fetched and decoded whole, where the server cannot count it
WHOLE_BYTES = 1024
#: bytes read at each end of a larger base64 part: more than any line an encoder writes
END_BYTES = 200
#: the parts counted per message (one FETCH): hostile mail may have thousands; those after keep the estimate
MAX_COUNTED = 100
_IDENTITY = ("7bit", "8bit", "binary")


def with_decoded_sizes(client: Session, uid: int, parts: list[Part]) -> list[Part]:
    """`parts` with the decoded size of each (`Part.exact_size`) wherever it can be known (see the module)."""
    encoded = [part for part in parts if part.encoding not in _IDENTITY and part.size > 0][:MAX_COUNTED]
    if not encoded:
        return parts
    sizes = _binary_sizes(client, uid, encoded) if client.has_capability("BINARY") else None
    if sizes is None:
        sizes = _counted_sizes(client, uid, encoded)
    return [
        dataclasses.replace(part, exact_size=sizes[part.part_id]) if part.part_id in sizes else part for part in parts
    ]


def _binary_sizes(client: Session, uid: int, parts: list[Part]) -> dict[str, int] | None:
    """`BINARY.SIZE` of each part, in one FETCH; None when the server refuses it (a transfer encoding it does
    not know: UNKNOWN-CTE)."""
    try:
        data = fetch(client, [uid], [f"BINARY.SIZE[{part.part_id}]" for part in parts]).get(uid, {})
    except imaplib.IMAP4.abort:
        raise
    except imaplib.IMAP4.error:
        return None
    sizes = {part.part_id: data.get(f"BINARY.SIZE[{part.part_id}]".encode()) for part in parts}
    return {part_id: size for part_id, size in sizes.items() if isinstance(size, int)}


def _counted_sizes(client: Session, uid: int, parts: list[Part]) -> dict[str, int]:
    """The decoded size of the small parts (fetched whole) and of the larger base64 ones (their ends), in one
    FETCH; a larger quoted-printable part is left out."""
    whole = [part for part in parts if part.size <= WHOLE_BYTES]
    ends = [part for part in parts if part.size > WHOLE_BYTES and part.encoding == "base64"]
    items = [f"BODY.PEEK[{part.part_id}]" for part in whole]
    for part in ends:
        items += [
            f"BODY.PEEK[{part.part_id}]<0.{END_BYTES}>",
            f"BODY.PEEK[{part.part_id}]<{part.size - END_BYTES}.{END_BYTES}>",
        ]
    if not items:
        return {}
    data = fetch(client, [uid], items).get(uid, {})
    sizes = {
        part.part_id: sum(map(len, decoded_stream(iter([_piece(data, part, None)]), part.encoding))) for part in whole
    }
    for part in ends:
        counted = base64_size(part.size, _piece(data, part, 0), _piece(data, part, part.size - END_BYTES))
        if counted is not None:
            sizes[part.part_id] = counted
    return sizes


def _piece(data: dict[bytes, Any], part: Part, start: int | None) -> bytes:
    """The fetched bytes of `part` (`BODY[2]`), or of its piece from `start` (`BODY[2]<start>`)."""
    key = f"BODY[{part.part_id}]" + ("" if start is None else f"<{start}>")
    value = data.get(key.encode())
    return value if isinstance(value, bytes) else b""


def base64_size(stored: int, head: bytes, tail: bytes) -> int | None:
    """The decoded size of a base64 part of `stored` bytes from its first and last bytes, if its lines are of one
    length (as encoders write them) and add up to `stored`; None otherwise."""
    first_end = head.find(b"\n")
    if first_end <= 0:
        return None
    line_break = 2 if head[first_end - 1 : first_end] == b"\r" else 1
    line = first_end + 1 - line_break  # characters in a full line
    text = tail.rstrip(b"\r\n \t")
    trailing = len(tail) - len(text)
    last_start = text.rfind(b"\n") + 1
    if last_start == 0:  # the last line is longer than the tail read: lines of one length cannot be told
        return None
    last = len(text) - last_start
    before_last = stored - trailing - last
    if last > line or before_last % (line + line_break):
        return None
    characters = before_last // (line + line_break) * line + last
    if characters % 4:
        return None
    return characters // 4 * 3 - len(text) + len(text.rstrip(b"="))
