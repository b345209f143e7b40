"""`imap.fetch_parser` gives what imapclient's own FETCH parser gives, or refuses what it refuses.

Generated responses mix everything the lexer distinguishes: words with `[...]` sections, NIL,
numbers with and without leading zeros, quoted strings with escapes, literals (right and wrong
sizes), parentheses (balanced or not), `%`, control characters, and raw bytes. Real items
(ENVELOPE, BODYSTRUCTURE, INTERNALDATE) are covered by every reading test, which now goes
through this parser.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from imapclient.exceptions import ProtocolError
from imapclient.response_parser import parse_fetch_response as imapclient_parse

from imap_mcp.server.imap.fetch_parser import parse_fetch_response

WORD_CHARS = st.sampled_from([b"A", b"x", b"\\", b"]", b"{", b"}", b".", b"1", b"0", b"\xc3\xa4", b"\x7f", b"<", b">"])
words = st.one_of(
    st.lists(WORD_CHARS, min_size=1, max_size=6).map(b"".join),
    st.sampled_from([b"NIL", b"UID", b"FLAGS", b"RFC822.SIZE", b"0", b"007", b"42", b"BODY[HEADER.FIELDS (FROM)]"]),
    st.builds(lambda head, inner: head + b"[" + inner + b"]", st.sampled_from([b"BODY", b""]), st.binary(max_size=8)),
)
quoted_inner = st.lists(st.sampled_from([b"a", b" ", b"\\\\", b'\\"', b"\\n", b"(", b"\xe2\x82\xac"]), max_size=6)
quoted = quoted_inner.map(lambda parts: b'"' + b"".join(parts) + b'"')
specials = st.sampled_from([b"(", b")", b"%", b"\x01", b"\x00", b"[", b'"', b"\t", b"\r\n"])
tokens = st.lists(st.one_of(words, quoted, specials, st.binary(max_size=3)), max_size=30)
separators = st.sampled_from([b" ", b"", b"  "])


@st.composite
def responses(draw: st.DrawFn) -> list[Any]:
    """One imaplib response: lines, some ending in a literal announcement followed by the literal."""
    chunks: list[Any] = []
    for _ in range(draw(st.integers(1, 3))):
        line = draw(separators).join(draw(tokens))
        if draw(st.booleans()):
            chunks.append(line)
            continue
        literal = draw(st.binary(max_size=12))
        size = draw(st.sampled_from([len(literal), len(literal) + 1, 0]))
        chunks.append((line + b" {" + str(size).encode() + b"}", literal))
    return chunks


values = st.recursive(
    st.one_of(words, quoted, st.sampled_from([b"NIL", b"%", b"\\Seen"])),
    lambda inner: st.lists(inner, max_size=4).map(lambda items: b"(" + b" ".join(items) + b")"),
    max_leaves=12,
)


@st.composite
def well_formed(draw: st.DrawFn) -> list[Any]:
    """`n (NAME value ...)`: the shape a server sends, values nested, sometimes a literal at the end."""
    names = st.sampled_from([b"UID", b"FLAGS", b"X-ITEM", b"RFC822.SIZE", b"BODY[TEXT]", b"MODSEQ"])
    items = draw(st.lists(st.tuples(names, values), max_size=5))
    body = b" ".join(name + b" " + item for name, item in items)
    number = draw(st.sampled_from([b"1", b"17", b"x", b"007"]))
    if draw(st.booleans()):
        return [number + b" (" + body + b")"]
    literal = draw(st.binary(max_size=12))
    announced = number + b" (" + body + (b" " if body else b"") + b"BODY[] {" + str(len(literal)).encode() + b"}"
    return [(announced, literal), b")"]


def outcome(parse: Any, response: list[Any]) -> Any:
    try:
        return dict(parse(response))
    except (ProtocolError, ValueError, TypeError, IndexError, AttributeError):
        return "refused"


def both(response: list[Any]) -> tuple[Any, Any]:
    return outcome(parse_fetch_response, response), outcome(
        lambda text: imapclient_parse(text, normalise_times=False, uid_is_key=False), response
    )


@settings(max_examples=400, deadline=None)
@given(responses())
def test_any_response_is_read_as_imapclient_reads_it(response: list[Any]) -> None:
    mine, theirs = both(response)
    assert mine == theirs


@settings(max_examples=300, deadline=None)
@given(well_formed())
def test_well_formed_responses_are_read_as_imapclient_reads_them(response: list[Any]) -> None:
    mine, theirs = both(response)
    assert mine == theirs


def test_a_real_summary_is_read_with_imapclient_s_objects() -> None:
    line = (
        b'7 (UID 99 FLAGS (\\Seen $Junk) INTERNALDATE "13-Jun-2025 01:45:40 +0000" RFC822.SIZE 460 ENVELOPE '
        b'("Fri, 13 Jun 2025 07:15:40 +0530" "Server \\"outage\\"" (("Niaj Silva" NIL "niaj" "mail.test")) NIL NIL '
        b'(("Al" NIL "al" "mail.test")) NIL NIL NIL "<id@x>") BODYSTRUCTURE ("text" "plain" ("charset" "utf-8") '
        b'NIL NIL "7bit" 12 1 NIL NIL NIL NIL))'
    )
    mine, theirs = both([line])
    assert mine == theirs and mine[7][b"UID"] == 99 and mine[7][b"ENVELOPE"].subject == b'Server "outage"'
    assert mine[7][b"BODYSTRUCTURE"].is_multipart is False


def test_a_literal_is_taken_whole_and_checked_against_its_announced_size() -> None:
    good = [(b"3 (UID 5 BODY[TEXT] {5}", b"hello"), b")"]
    assert parse_fetch_response(good)[3][b"BODY[TEXT]"] == b"hello"
    with pytest.raises(ProtocolError):
        parse_fetch_response([(b"3 (UID 5 BODY[TEXT] {6}", b"hello"), b")"])


def test_an_item_name_that_is_not_a_word_is_refused_where_imapclient_would_crash() -> None:
    with pytest.raises(ProtocolError):
        parse_fetch_response([b"1 (7 8)"])
    with pytest.raises(AttributeError):
        imapclient_parse([b"1 (7 8)"], normalise_times=False, uid_is_key=False)


@pytest.mark.parametrize(
    "hostile",
    [b'1 (X "' + b"a\\" * 100_000, b"1 (X " + b"[a" * 100_000, b"1 (X a" + b"[a" * 100_000, b"1 " + b"(" * 100_000],
    ids=["open quote", "open brackets", "glued brackets", "deep parentheses"],
)
def test_a_hostile_line_is_refused(hostile: bytes) -> None:
    """Refused, without recursion however deep. The scan stops at the first unclosed string or section
    (possessive patterns, tokens read lazily): reading all tokens first made "open brackets" take 11 s."""
    with pytest.raises(ProtocolError):
        parse_fetch_response([hostile])
