"""Small IMAP commands imapclient does not offer in the shape a 100,000-message mailbox needs.

- `fetch` sends UIDs as a compressed set (`uid_sets.compress`), split so that no command line
  nears the server's limit (64 KB on Dovecot). It also takes a set as the server gave it,
  which imapclient 4.1's own `fetch` cannot: it filters the answer with `int()` on the set.
- `esearch_all` asks for the matching UIDs as one compact set (RFC 4731 ESEARCH).
- `raw_untagged` sends a command imapclient has no method for (SORT, SEARCH with our own syntax).
- `take_response_codes` reads and clears the response codes imaplib kept (COPYUID after MOVE).
- `authenticate` runs AUTHENTICATE with a callback that answers each server challenge in turn
  (imapclient's own OAuth logins resend the token where RFC 7628 wants an ending answer).

This module is the one place that reaches into imapclient's private API (`_imap`, the imaplib
connection, `_raw_command_untagged`, `_checkok`), the way imapclient's own methods do; an
imapclient upgrade is checked here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from imapclient import IMAPClient
from imapclient.response_parser import parse_fetch_response

from imap_mcp.server.imap.uid_sets import compress

#: keep each command line well under Dovecot's 64 KB limit
MAX_SET_CHARS = 16_000

FetchData = dict[bytes, Any]


def split_uid_set(uid_set: str, max_chars: int = MAX_SET_CHARS) -> Iterator[str]:
    """Pieces of a compressed UID set, each short enough for one command line."""
    piece: list[str] = []
    length = 0
    for run in filter(None, uid_set.split(",")):
        if piece and length + len(run) + 1 > max_chars:
            yield ",".join(piece)
            piece, length = [], 0
        piece.append(run)
        length += len(run) + 1
    if piece:
        yield ",".join(piece)


def _responses(data: list[Any]) -> Iterator[list[Any]]:
    """imaplib's untagged FETCH data cut into one list per response.

    A response with literals arrives as `(text, literal)` pairs and ends with a bytes line, so every
    bytes item closes one response. Parsing them one by one keeps two responses that share a
    sequence number (before and after an EXPUNGE) from being merged into one message.
    """
    response: list[Any] = []
    for item in data:
        if item is None:
            continue
        response.append(item)
        if isinstance(item, bytes):
            yield response
            response = []
    if response:
        yield response


def _by_uid(data: list[Any]) -> Iterator[tuple[int, FetchData]]:
    """(UID, values) of each FETCH response; one without a UID names only a sequence number and is dropped."""
    for response in _responses(data):
        for values in parse_fetch_response(response, normalise_times=False, uid_is_key=False).values():
            uid = values.pop(b"UID", None)
            values.pop(b"SEQ", None)
            if isinstance(uid, int):
                yield uid, values


def fetch(client: IMAPClient, uids: Sequence[int] | str, items: Sequence[str]) -> dict[int, FetchData]:
    """`UID FETCH` of `items` for `uids` (a list, or a compressed set); keyed by UID, times kept timezone-aware.

    Only messages asked for are returned. Responses are keyed by the UID they carry, never by their
    sequence number: an unsolicited FETCH (another session changed flags) without a UID is dropped,
    and a message for which no response carries the first requested item is left out.
    """
    uid_set = uids if isinstance(uids, str) else compress(uids)
    wanted = None if isinstance(uids, str) else set(uids)
    found: dict[int, FetchData] = {}
    # up to the first space: servers spell a header list differently (Courier answers `("MESSAGE-ID")`)
    first_key = items[0].split("<")[0].split(" ")[0].replace(".PEEK", "").encode()
    for piece in split_uid_set(uid_set):
        tag = client._imap._command("UID", "FETCH", piece, "(" + " ".join(items) + ")")
        typ, data = client._imap._command_complete("FETCH", tag)
        client._checkok("fetch", typ, data)
        typ, data = client._imap._untagged_response(typ, data, "FETCH")
        for uid, values in _by_uid(data):
            if wanted is None or uid in wanted:
                found.setdefault(uid, {}).update(values)
    return {uid: values for uid, values in found.items() if any(k.startswith(first_key) for k in values)}


def esearch_all(client: IMAPClient, criteria: list[bytes]) -> str:
    """The UIDs matching `criteria` as one compressed set (`UID SEARCH RETURN (ALL)`); "" when none match."""
    response = raw_untagged(client, b"SEARCH", [b"RETURN", b"(ALL)", *criteria], response_name="ESEARCH")
    for line in response:
        words = (line or b"").split()
        for position, word in enumerate(words[:-1]):
            if word.upper() == b"ALL":
                return words[position + 1].decode("ascii")
    return ""


def raw_untagged(client: IMAPClient, command: bytes, args: list[bytes], **options: Any) -> Any:
    """Send `command` with `args` as given and return its untagged response (imapclient's own raw path)."""
    return client._raw_command_untagged(command, args, **options)


def take_response_codes(client: IMAPClient, code: str) -> list[bytes]:
    """The `code` response codes (e.g. COPYUID) the connection saw since the last call, and forget them."""
    taken: list[bytes] = client._imap.untagged_responses.pop(code, [])
    return taken


def authenticate(client: IMAPClient, mechanism: str, answer: Callable[[bytes], str]) -> None:
    """SASL AUTHENTICATE; `answer(challenge)` gives each client response. A refusal raises IMAPClientError."""
    client._command_and_check("authenticate", mechanism, answer)
