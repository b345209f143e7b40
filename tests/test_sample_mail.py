"""The sample mail (`server/demo/sample_mail.py`), rendered once per process: each seeding still gives every
message a Message-ID of its own, and the reply still names its original's; on every server each message
arrives in its mailbox, in order, with its flags and date; a refused MULTIAPPEND is an error."""

from __future__ import annotations

from email import message_from_bytes
from email.policy import default

import pytest
from command_log import Command, CommandLog
from harness import Account, keeps_append_flags, new_account, seeded_account
from imapclient import IMAPClient

from imap_mcp.server.demo.dovecot import Dovecot
from imap_mcp.server.demo.sample_mail import SampleMessage, sample_messages, seed
from imap_mcp.server.errors import MailboxError

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


@pytest.mark.matrix
def test_each_mailbox_holds_its_sample_messages_in_order_with_their_flags_and_dates(account: Account) -> None:
    """Seeding takes a mailbox's messages in one MULTIAPPEND where the server has it (Dovecot, Cyrus), one APPEND
    each elsewhere: either way each message arrives whole, in order, with its flags and its date."""
    expected: dict[str, list[SampleMessage]] = {}
    for item in sample_messages():
        expected.setdefault(account.mailbox(item.mailbox), []).append(item)
    client = account.imap()
    client.normalise_times = False
    try:
        for mailbox, items in expected.items():
            client.select_folder(mailbox, readonly=True)
            fetched = client.fetch(client.search("ALL"), ["FLAGS", "INTERNALDATE", "BODY.PEEK[HEADER]"])
            found = [fetched[uid] for uid in sorted(fetched)]
            subjects = [str(message_from_bytes(data[b"BODY[HEADER]"], policy=default)["Subject"]) for data in found]
            assert subjects == [str(item.message["Subject"]) for item in items], mailbox
            for item, data in zip(items, found, strict=True):
                assert set(item.flags) <= set(data[b"FLAGS"]), (mailbox, item.message["Subject"])
                if keeps_append_flags(account.server):  # Mailutils keeps neither flags nor dates of an APPEND
                    assert data[b"INTERNALDATE"] == item.date, (mailbox, item.message["Subject"])
    finally:
        client.logout()


def test_a_multiappend_the_server_refuses_is_an_error_naming_the_mailbox(dovecot: Dovecot) -> None:
    """imapclient returns a refused MULTIAPPEND instead of raising it: seeding must not go on as if it was kept."""
    with CommandLog(dovecot.port) as log:
        recorded = seed_through(log, new_account(dovecot))
        first_append = next(n for n, command in enumerate(recorded) if command.name == "APPEND")
        with pytest.raises(MailboxError, match="refused the sample messages for 'INBOX'"):
            seed_through(log, new_account(dovecot), spoiled=first_append)
        assert [command.name for command in log.spoiled] == ["APPEND"]


def seed_through(log: CommandLog, account: Account, spoiled: int | None = None) -> list[Command]:
    """Seed `account` over a plain connection through `log` (its `spoiled`-th command answered NO); the commands
    seeding sent."""
    client = IMAPClient("127.0.0.1", log.port, ssl=False, timeout=10)
    try:
        client.login(account.username, account.password)
        log.take()
        if spoiled is not None:
            log.spoil(spoiled, "NO")
        seed(client)
        return log.take()
    finally:
        client.logout()
