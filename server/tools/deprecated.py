"""The deprecated way to name messages: a mailbox with UIDs instead of ids.

Kept for compatibility with clients written against earlier email servers. Ids are better:
they carry the mailbox's UIDVALIDITY, so a stale one is refused; a mailbox + UID pair is taken
to mean "that UID in the mailbox as it is now".
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from imap_mcp.server.imap.message_ids import MAX_UID

DeprecatedMailbox = Annotated[
    str | None, Field(min_length=1, description="Deprecated: mailbox name, with uid(s), instead of id(s).")
]
DeprecatedUid = Annotated[int | None, Field(ge=1, le=MAX_UID, description="Deprecated: the IMAP UID, with mailbox.")]
DeprecatedUids = Annotated[
    list[Annotated[int, Field(ge=1, le=MAX_UID)]] | None,
    Field(min_length=1, max_length=50_000, description="Deprecated: IMAP UIDs (never ranges), with mailbox."),
]
