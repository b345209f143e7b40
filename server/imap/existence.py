"""Which of some UIDs the selected mailbox holds: asked with `UID FETCH … (UID)`, never `UID SEARCH UID`.

Some servers take the set in `UID SEARCH UID <set>` for message numbers (GNU Mailutils does), so
every message after a gap in the UIDs would be read as missing. A FETCH response names its message
by the UID it carries, whatever the server took the set for, and only UIDs asked about are kept:
a server may also answer a UID past the last one with the last message (RFC 3501 allows that for
`n:*` only; Mailutils does it for any UID). A server that refuses the set instead of ignoring the
UIDs it does not hold (Mailutils answers BAD) is asked for the UID of every message
(`fetch.every_uid`).
"""

from __future__ import annotations

import imaplib
from collections.abc import Iterable

from .fetch import answered_uids, every_uid, split_uid_set
from .session import Session
from .uid_sets import compress

#: the first UID Cyrus does not take in a SEARCH set together with lower ones (RFC 3501 allows UIDs up to 2^32 - 1)
_CYRUS_UID_LIMIT = 2**31


def existing_uids(client: Session, uids: Iterable[int]) -> set[int]:
    """Which of `uids` the selected mailbox holds.

    UIDs from 2^31 up are asked about in sets of their own, as SEARCH needed it: Cyrus answers an empty
    SEARCH for a whole set that names one.
    """
    asked = set(uids)
    low = [uid for uid in asked if uid < _CYRUS_UID_LIMIT]
    high = [uid for uid in asked if uid >= _CYRUS_UID_LIMIT]
    found: set[int] = set()
    try:
        for piece in (piece for group in (low, high) if group for piece in split_uid_set(compress(group))):
            found |= answered_uids(client, piece)
    except imaplib.IMAP4.abort:
        raise
    except imaplib.IMAP4.error:
        return every_uid(client) & asked
    return found & asked
