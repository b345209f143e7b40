"""The drafts this server saved, in the store on real SQLite and PostgreSQL: recorded, read back, forgotten."""

from __future__ import annotations

from pathlib import Path

import pytest
from postgres import PrivatePostgres

from imap_mcp.server.store.database import MIGRATIONS, Store
from imap_mcp.server.store.drafts import DraftPlace, forget_draft, record_draft, recorded_digest

PLACE = DraftPlace("demo@example.org@imap.example.org:993", "Drafts", 1_700_000_000, 7)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.sqlite3'}"
    cluster: PrivatePostgres = request.getfixturevalue("postgres")
    return cluster.new_database()


def test_a_draft_is_known_by_its_account_mailbox_uidvalidity_and_uid_until_forgotten(url: str) -> None:
    assert recorded_digest(url, PLACE) is None
    record_draft(url, PLACE, "sha256:aa")
    record_draft(url, PLACE, "sha256:bb")  # saved again at the same place (a mailbox made again): the last wins
    others = [
        DraftPlace("other@example.org@imap.example.org:993", PLACE.mailbox, PLACE.uidvalidity, PLACE.uid),
        DraftPlace(PLACE.account, "Entwürfe", PLACE.uidvalidity, PLACE.uid),
        DraftPlace(PLACE.account, PLACE.mailbox, PLACE.uidvalidity + 1, PLACE.uid),
        DraftPlace(PLACE.account, PLACE.mailbox, PLACE.uidvalidity, PLACE.uid + 1),
    ]
    assert recorded_digest(url, PLACE) == "sha256:bb"
    assert [recorded_digest(url, other) for other in others] == [None] * 4
    forget_draft(url, PLACE)
    assert recorded_digest(url, PLACE) is None
    assert Store(url).schema_version() == len(MIGRATIONS)
