"""Flags as IMAP compares them, and what a mailbox keeps, read as RFC 9051 says: the one reading of both.

Flag and keyword names are case-insensitive (RFC 9051 2.3.2): a server may answer `$forwarded` to a
STORE of `$Forwarded`, and that is the same keyword. So every comparison of flags goes through `same`
or `holds`.

PERMANENTFLAGS (RFC 9051 7.1) lists the flags a client can change permanently in the selected mailbox;
`\\*` in it means new keywords can be created (and kept). A system flag (`\\Seen`, `\\Flagged`, ...) not
listed is not kept, whatever `\\*` says; a keyword is kept when listed or with `\\*`. A SELECT answer
without PERMANENTFLAGS says nothing, which RFC 3501 and 9051 read as every flag kept (`None` here).
`keeps` is the one reading: the tools (set_message_flags, list_new_messages, forward_message's mark),
`imap-mcp check` and get_server_info all ask it, so they cannot disagree.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: in PERMANENTFLAGS: new keywords can be created and are kept
ANY_NEW_KEYWORD = b"\\*"
#: an IMAP keyword: an atom without specials (RFC 3501), at most 64 characters
KEYWORD = re.compile(r"[A-Za-z0-9$_.+\-&']{1,64}")
#: the system flags set_message_flags sets and clears (`\\Deleted` is delete_messages' own)
SETTABLE_SYSTEM_FLAGS = ("\\Seen", "\\Flagged", "\\Answered")


def _lowered(flag: bytes | str) -> bytes:
    return (flag.encode("utf-8", "replace") if isinstance(flag, str) else bytes(flag)).lower()


def same(first: bytes | str, second: bytes | str) -> bool:
    """Whether two flag names are the same flag (case-insensitive, as IMAP compares them)."""
    return _lowered(first) == _lowered(second)


def holds(flags: Iterable[bytes | str], flag: bytes | str) -> bool:
    """Whether `flags` (a message's, or a mailbox's list) include `flag`, compared as IMAP compares flags."""
    wanted = _lowered(flag)
    return any(_lowered(found) == wanted for found in flags)


def is_keyword(flag: bytes | str) -> bool:
    """A keyword (no backslash), as opposed to a system flag (`\\Seen`) or `\\*`."""
    return not _lowered(flag).startswith(b"\\")


def keeps(permanent: Iterable[bytes] | None, flag: bytes | str) -> bool:
    """Whether a mailbox whose PERMANENTFLAGS are `permanent` (None: not given) keeps `flag` (see the module)."""
    if permanent is None:
        return True
    listed = list(permanent)
    return holds(listed, flag) or (is_keyword(flag) and holds(listed, ANY_NEW_KEYWORD))


def keeps_new_keywords(permanent: Iterable[bytes] | None) -> bool:
    """Whether a mailbox with these PERMANENTFLAGS keeps a keyword it has never seen (`\\*`, or not given)."""
    return permanent is None or holds(permanent, ANY_NEW_KEYWORD)
