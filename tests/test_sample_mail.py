"""The sample mail (`server/demo/sample_mail.py`), rendered once per process: each seeding still gives every
message a Message-ID of its own, and the reply still names its original's."""

from __future__ import annotations

from email import message_from_bytes

from harness import seeded_account
from imapclient import IMAPClient

from imap_mcp.server.demo.dovecot import Dovecot

FIELDS = b"BODY[HEADER.FIELDS (SUBJECT MESSAGE-ID IN-REPLY-TO)]"


def headers(client: IMAPClient) -> dict[str, tuple[str, str]]:
    """Subject -> (Message-ID, In-Reply-To) of every message in INBOX."""
    client.select_folder("INBOX", readonly=True)
    fetched = client.fetch(client.search("ALL"), [b"BODY.PEEK[HEADER.FIELDS (SUBJECT MESSAGE-ID IN-REPLY-TO)]"])
    parsed = [message_from_bytes(data[FIELDS]) for data in fetched.values()]
    return {str(m["Subject"]): (str(m["Message-ID"]), str(m["In-Reply-To"] or "")) for m in parsed}


def test_each_seeding_has_message_ids_of_its_own_and_the_reply_names_its_original(dovecot: Dovecot) -> None:
    seen = []
    for account in (seeded_account(dovecot), seeded_account(dovecot)):
        client = account.imap()
        try:
            seen.append(headers(client))
        finally:
            client.logout()
    first, second = seen
    assert first.keys() == second.keys() and len(first) == 9
    assert not {i for i, _ in first.values()} & {i for i, _ in second.values()}
    for found in seen:
        assert found["Re: Project kickoff"][1] == found["Project kickoff"][0]
