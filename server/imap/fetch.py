"""Small IMAP commands imapclient does not offer in the shape a 100,000-message mailbox needs.

- `fetch` sends UIDs as a compressed set (`uid_sets.compress`), split so that no command line
  nears the server's limit (64 KB on Dovecot). It also takes a set as the server gave it,
  which imapclient 4.1's own `fetch` cannot: it filters the answer with `int()` on the set.
  A message whose response was too long to read (see `long_lines`) or could not be parsed comes
  back as `{UNREADABLE: reason}` instead of failing the whole command.
- `esearch_all` asks for the matching UIDs as one compact set (RFC 4731 ESEARCH).
- `raw_untagged` sends a command imapclient has no method for (SORT, SEARCH with our own syntax).
- `take_response_codes` reads and clears the responses imaplib kept (COPYUID after MOVE, EXISTS).
- `add_flags_unless_changed` is a conditional STORE (RFC 7162 UNCHANGEDSINCE), which imapclient lacks;
  `add_flags_reporting` a STORE that says which of a compressed set it changed.
- `authenticate` runs AUTHENTICATE with a callback that answers each server challenge in turn
  (imapclient's own OAuth logins resend the token where RFC 7628 wants an ending answer).
- `read_lines_boundedly` makes a new connection skip overlong FETCH responses (`long_lines`);
  `in_step` says whether a command was left unfinished on a connection (then it must be closed);
  `last_command_and_line` names what an answer that could not be used answered.

This module and `fetch_parser` (which reads FETCH responses faster than imapclient, with its own
conversions) are the one place that reaches into imapclient's private API (`_imap`, the imaplib
connection, `_raw_command_untagged`, `_checkok`), the way imapclient's own methods do; an
imapclient upgrade is checked here.
"""

from __future__ import annotations

import imaplib
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from imapclient import IMAPClient
from imapclient.exceptions import ProtocolError

from .fetch_parser import parse_fetch_response
from .long_lines import MAX_LINE, OVERSIZED, bound_lines, last_exchange
from .uid_sets import compress, expand

#: keep each command line well under Dovecot's 64 KB limit
MAX_SET_CHARS = 16_000

FetchData = dict[bytes, Any]
#: the key of a message whose FETCH response could not be read; its value says why
UNREADABLE = b"X-IMAP-MCP-UNREADABLE"
TOO_LONG = f"one IMAP response for it was over {MAX_LINE} bytes (e.g. tens of thousands of addresses or parts)"
NOT_UNDERSTOOD = "the IMAP server's response for it could not be parsed"


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


_SKIPPED_HEAD = re.compile(rb"(\d+) \((?:UID (\d+)[ )])?")


def _head(response: list[Any]) -> tuple[int, int | None] | None:
    """(message number, UID when the server sent it first) of a FETCH response, read from its first bytes."""
    first = response[0]
    head = _SKIPPED_HEAD.match(first[0] if isinstance(first, tuple) else first)
    if head is None:
        return None
    return int(head.group(1)), int(head.group(2)) if head.group(2) else None


def _parsed(response: list[Any]) -> tuple[int | None, FetchData]:
    """(UID, values) of one FETCH response; `{UNREADABLE: reason}` when it was skipped or cannot be parsed."""
    last = response[-1]
    if isinstance(last, bytes) and last.endswith(OVERSIZED):
        return None, {UNREADABLE: TOO_LONG}
    try:
        parsed = parse_fetch_response(response)
    except (ProtocolError, ValueError, TypeError, IndexError):  # what imapclient raises on what it cannot read
        return None, {UNREADABLE: NOT_UNDERSTOOD}
    values: FetchData = next(iter(parsed.values()), {})
    uid = values.pop(b"UID", None)
    values.pop(b"SEQ", None)
    return (uid if isinstance(uid, int) else None), values


def _by_uid(data: list[Any], unread_numbers: dict[int, str]) -> Iterator[tuple[int, FetchData]]:
    """(UID, values) of each FETCH response; one without a UID names only a sequence number and is dropped.

    A response that could not be read gives `{UNREADABLE: reason}`; when its UID is not known, its
    message number (and the reason) goes into `unread_numbers` instead.
    """
    for response in _responses(data):
        uid, values = _parsed(response)
        if uid is None and UNREADABLE in values:
            head = _head(response)
            uid = head[1] if head else None
            if uid is None and head is not None:
                unread_numbers[head[0]] = values[UNREADABLE]
        if uid is not None:
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
    first_key = _answer_prefix(items[0])
    for piece in split_uid_set(uid_set):
        unread_numbers: dict[int, str] = {}
        data = _fetched(client, True, piece, items) if wanted is None else _fetched_of_held(client, piece, items)
        for uid, values in _by_uid(data, unread_numbers):
            if wanted is None or uid in wanted:
                found.setdefault(uid, {}).update(values)
        for uid, reason in _uids_of_numbers(client, unread_numbers).items():
            if wanted is None or uid in wanted:
                found.setdefault(uid, {})[UNREADABLE] = reason
    return {
        uid: values
        for uid, values in found.items()
        if UNREADABLE in values or any(k.startswith(first_key) for k in values)
    }


def _answer_prefix(item: str) -> bytes:
    """How every server's answer to the FETCH item `item` begins: `BODY.PEEK[HEADER.FIELDS (X)]<0.9>` is
    answered as `BODY[HEADER.FIELDS (X)]` by Dovecot but `BODY[HEADER.FIELDS ("X")]` by Courier, so only
    `BODY[HEADER.FIELDS` is compared (no partial range, no field list)."""
    return item.replace(".PEEK", "").split("<")[0].split(" ")[0].encode()


def _fetched(client: IMAPClient, by_uid: bool, message_set: str, items: Sequence[str]) -> list[Any]:
    """The untagged data of one `UID FETCH` (or, with `by_uid=False`, `FETCH` by message number)."""
    command = ("UID", "FETCH") if by_uid else ("FETCH",)
    tag = client._imap._command(*command, message_set, "(" + " ".join(items) + ")")
    typ, data = client._imap._command_complete("FETCH", tag)
    client._checkok("fetch", typ, data)
    return list(client._imap._untagged_response(typ, data, "FETCH")[1])


def _fetched_of_held(client: IMAPClient, uid_set: str, items: Sequence[str]) -> list[Any]:
    """`_fetched` of `uid_set`; when the server refuses the set, of those of its UIDs the mailbox holds.

    A server may refuse a set that names a UID it does not hold (Mailutils answers BAD), where RFC 3501
    wants those UIDs ignored: asked again for only the UIDs the mailbox holds (`every_uid`). A refusal
    for any other reason (all of them are held) stands.
    """
    try:
        return _fetched(client, True, uid_set, items)
    except imaplib.IMAP4.abort:
        raise
    except imaplib.IMAP4.error:
        asked = expand(uid_set)
        held = every_uid(client) & set(asked)
        if len(held) == len(set(asked)):
            raise
    return _fetched(client, True, compress(held), items) if held else []


def answered_uids(client: IMAPClient, uid_set: str) -> set[int]:
    """The UIDs the server names in answer to `UID FETCH uid_set (UID)`: each response carries its message's
    UID, whatever the server took the set for. A refusal (NO, BAD) is raised."""
    found = parse_fetch_response([item for item in _fetched(client, True, uid_set, ["UID"]) if item])
    return {values[b"UID"] for values in found.values() if isinstance(values.get(b"UID"), int)}


def every_uid(client: IMAPClient) -> set[int]:
    """The UID of every message in the selected mailbox (`UID FETCH 1:* (UID)`)."""
    return answered_uids(client, "1:*")


def _uids_of_numbers(client: IMAPClient, unread_numbers: dict[int, str]) -> dict[int, str]:
    """`unread_numbers` keyed by UID instead of message number (for a server that did not send the UID first)."""
    if not unread_numbers:
        return {}
    data = _fetched(client, False, compress(unread_numbers), ["UID"])
    found = parse_fetch_response(data)
    return {values[b"UID"]: unread_numbers[number] for number, values in found.items() if number in unread_numbers}


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
    """The `code` responses (a response code such as COPYUID, or an untagged EXISTS) the connection saw since the
    last call, and forget them."""
    taken: list[bytes] = client._imap.untagged_responses.pop(code, [])
    return taken


def add_flags_unless_changed(client: IMAPClient, uid_set: str, modseq: int, flags: Sequence[bytes]) -> list[int]:
    """`UID STORE uid_set (UNCHANGEDSINCE modseq) +FLAGS.SILENT (flags)` (RFC 7162): add `flags` to the messages
    of `uid_set` that no one changed since `modseq`; return the UIDs the server left alone (its MODIFIED set).

    The modifier also enables CONDSTORE for the rest of the session: later FETCH answers carry MODSEQ, which
    `fetch` parses like any other item.
    """
    take_response_codes(client, "MODIFIED")
    flag_list = b"(" + b" ".join(flags) + b")"
    client._command_and_check(
        "store", uid_set, f"(UNCHANGEDSINCE {modseq})".encode(), b"+FLAGS.SILENT", flag_list, uid=True
    )
    return [uid for code in take_response_codes(client, "MODIFIED") for uid in expand(code.decode("ascii"))]


def add_flags_reporting(client: IMAPClient, uid_set: str, flags: Sequence[bytes]) -> set[int]:
    """`UID STORE uid_set +FLAGS (flags)`, not silent: the UIDs of `uid_set` the server answered for, which are
    the messages that were there (imapclient's own `add_flags` cannot take a compressed set and answer)."""
    flag_list = "(" + " ".join(flag.decode("ascii") for flag in flags) + ")"
    tag = client._imap._command("UID", "STORE", uid_set, "+FLAGS", flag_list)
    typ, data = client._imap._command_complete("STORE", tag)
    client._checkok("store", typ, data)
    answered = list(client._imap._untagged_response(typ, data, "FETCH")[1])
    asked = set(expand(uid_set))
    return {uid for uid, _ in _by_uid(answered, {}) if uid in asked}


def authenticate(client: IMAPClient, mechanism: str, answer: Callable[[bytes], str]) -> None:
    """SASL AUTHENTICATE; `answer(challenge)` gives each client response. A refusal raises IMAPClientError."""
    client._command_and_check("authenticate", mechanism, answer)


def read_lines_boundedly(client: IMAPClient) -> None:
    """Make `client` skip a FETCH response with a line over imaplib's limit instead of failing mid-response."""
    bound_lines(client._imap)


def last_command_and_line(client: IMAPClient) -> tuple[bytes, bytes]:
    """The name of the last command sent on `client` and the beginning of the last line read (`long_lines`)."""
    return last_exchange(client._imap)


def in_step(client: IMAPClient) -> bool:
    """True when no command is left unfinished on `client`: the next response is an answer to the next command.

    A command interrupted by a protocol error (an overlong or malformed response, a timeout) leaves
    its tag waiting, and whatever the server still sends for it would be read as the answer to the
    next command: such a connection must be closed, never reused.
    """
    return not client._imap.tagged_commands
