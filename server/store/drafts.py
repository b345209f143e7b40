"""The drafts this server saved: what lets `update_draft` replace one without asking a person.

Each draft `save_draft` or `update_draft` appended is recorded by where it is (account, mailbox, UIDVALIDITY, UID)
and a digest of its bytes. A draft is this server's own only while a row names it and its bytes, read now, have
that digest: never because of a keyword or header, which any caller, mail client or server could write. A row
whose draft is gone stays harmless (a UID is never given again under one UIDVALIDITY); the row of a draft
update_draft replaced is removed with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .clock import store_time
from .ledger import ledger_at


@dataclass(frozen=True)
class DraftPlace:
    """Where one draft is: the account, its mailbox, the mailbox's UIDVALIDITY and its UID."""

    account: str
    mailbox: str
    uidvalidity: int
    uid: int


def record_draft(url: str, place: DraftPlace, digest: str) -> None:
    """Record that this server saved the draft at `place`, whose bytes have `digest` (`StoreError` if it cannot)."""
    store = ledger_at(url).store
    with store.transaction() as tx:
        now = store_time(tx)
        tx.run(
            "INSERT INTO saved_drafts (account, mailbox, uidvalidity, uid, digest, saved_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (account, mailbox, uidvalidity, uid) DO UPDATE SET digest = excluded.digest, "
            "saved_at = excluded.saved_at",
            place.account,
            place.mailbox,
            place.uidvalidity,
            place.uid,
            digest,
            now,
        )


def recorded_digest(url: str, place: DraftPlace) -> str | None:
    """The digest recorded for the draft at `place`, or None when this server did not save it."""
    store = ledger_at(url).store
    with store.transaction() as tx:
        row = tx.one(
            "SELECT digest FROM saved_drafts WHERE account = ? AND mailbox = ? AND uidvalidity = ? AND uid = ?",
            place.account,
            place.mailbox,
            place.uidvalidity,
            place.uid,
        )
    return str(row[0]) if row is not None else None


def forget_draft(url: str, place: DraftPlace) -> None:
    """Remove the row of the draft at `place` (it was replaced)."""
    store = ledger_at(url).store
    with store.transaction() as tx:
        tx.run(
            "DELETE FROM saved_drafts WHERE account = ? AND mailbox = ? AND uidvalidity = ? AND uid = ?",
            place.account,
            place.mailbox,
            place.uidvalidity,
            place.uid,
        )
