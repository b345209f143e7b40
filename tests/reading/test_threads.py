"""get_thread: the whole conversation of a message, across INBOX, Sent and Archive, joined by its headers only.

The conversation of the matrix test is six messages: the first in INBOX; my answer in Sent; a reply in INBOX,
copied into Archive; a reply to that in Archive; one in INBOX that names its parent only in In-Reply-To (no
References: a THREAD of INBOX cannot join it, its parent is in Archive); my answer to that in Sent, naming only
it. Next to them, an unrelated message with the conversation's subject (THREAD=REFERENCES groups it in).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

import pytest
from harness import Account, append_message, error_text, message_ids, pool_without, served, server_name, structured

from imap_mcp.server.imap.mailbox_state import MailboxState
from imap_mcp.server.imap.message_ids import MessageRef, decode_id
from imap_mcp.server.imap.pool import Examined, ImapPool
from imap_mcp.server.reading import threads
from imap_mcp.server.reading.thread_bodies import shares
from imap_mcp.server.reading.thread_links import MAX_REFERENCES, Links, conversation, links_of
from imap_mcp.server.reading.threads import _thread_fits, thread_containing

pytestmark = pytest.mark.anyio

ME = "demo@example.org"
SUBJECT = "Budget 2027"
#: how each matrix server threads the start mailbox when nothing is hidden
THREADED_WITH = {
    "dovecot": "THREAD=REFS",
    "cyrus": "THREAD=REFS",
    "courier": "THREAD=REFERENCES",
    "mailutils": "SEARCH",
}


def mail(
    own: str | None,
    replied: str | None = None,
    references: tuple[str, ...] = (),
    sender: str = "alice@example.com",
    subject: str = "Re: " + SUBJECT,
    body: str = "Fine by me.\n",
) -> bytes:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = ME
    message["Subject"] = subject
    if own:
        message["Message-ID"] = own
    if replied:
        message["In-Reply-To"] = replied
    if references:
        message["References"] = " ".join(references)
    message.set_content(body)
    return message.as_bytes()


def day(number: int, hour: int = 9) -> dt.datetime:
    return dt.datetime(2026, 11, number, hour, 0, tzinfo=dt.UTC)


def put(account: Account, mailbox: str, raw: bytes, received: dt.datetime) -> str:
    """Append `raw` to `mailbox`; its id."""
    uid = append_message(account, raw, mailbox, received=received)
    return next(i for i in message_ids(account, mailbox) if i.endswith(f".{uid}"))


def copy(account: Account, message_id: str, mailbox: str) -> None:
    """COPY the message into `mailbox`, as a mail client files a message (the copy's UID is read later: Mailutils
    gives it its lasting UID only once the mailbox is next written to)."""
    ref = decode_id(message_id)
    client = account.imap()
    try:
        client.select_folder(ref.mailbox, readonly=True)
        client.copy([ref.uid], account.mailbox(mailbox))
    finally:
        client.logout()


def ids_by_message_id(account: Account, *mailboxes: str) -> dict[str, list[str]]:
    """The ids of the messages in `mailboxes`, by their Message-ID header, in the order of `mailboxes`."""
    found: dict[str, list[str]] = {}
    client = account.imap()
    try:
        for mailbox in mailboxes:
            name = account.mailbox(mailbox)
            uidvalidity = int(client.select_folder(name, readonly=True)[b"UIDVALIDITY"])
            for uid, data in sorted(
                client.fetch(client.search(["ALL"]), ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]).items()
            ):
                header = next(v for k, v in data.items() if k.startswith(b"BODY[HEADER.FIELDS"))
                own = header.decode().split(":", 1)[-1].strip()
                found.setdefault(own, []).append(MessageRef(name, uidvalidity, uid).id)
    finally:
        client.logout()
    return found


@dataclass
class Conversation:
    #: each message's ids, oldest first: one per mailbox holding it
    messages: list[list[str]]
    unrelated: str

    @property
    def every_id(self) -> list[str]:
        return [i for copies in self.messages for i in copies]


def spread_conversation(account: Account) -> Conversation:
    """The conversation of the module's doc, on `account` (an empty one)."""
    m1, m2, m3, m4, m5, m6 = (f"<m{n}.budget@example.org>" for n in range(1, 7))
    put(account, "INBOX", mail(m1, subject=SUBJECT), day(1))
    put(account, "Sent", mail(m2, m1, (m1,), sender=ME), day(2))
    copy(account, put(account, "INBOX", mail(m3, m2, (m1, m2), sender="bob@example.net"), day(3)), "Archive")
    put(account, "Archive", mail(m4, m3, (m1, m2, m3), sender="carol@example.com"), day(4))
    put(account, "INBOX", mail(m5, m4, sender="dave@example.com"), day(5))  # only In-Reply-To
    put(account, "Sent", mail(m6, m5, (m5,), sender=ME), day(6))
    put(account, "INBOX", mail("<other@example.net>", sender="zoe@example.com"), day(3, 12))
    ids = ids_by_message_id(account, "INBOX", "Sent", "Archive")
    return Conversation([ids[m] for m in (m1, m2, m3, m4, m5, m6)], ids["<other@example.net>"][0])


async def thread(client: Any, message_id: str, **arguments: Any) -> dict[str, Any]:
    return structured(await client.call_tool("get_thread", {"id": message_id, **arguments}))


def locations(found: dict[str, Any]) -> list[list[str]]:
    return [sorted(location["id"] for location in entry["locations"]) for entry in found["messages"]]


def server_threads(account: Account) -> set[str]:
    client = account.imap()
    try:
        return {c.decode() for c in client.capabilities() if c.upper().startswith(b"THREAD=")}
    finally:
        client.logout()


@pytest.mark.matrix
@pytest.mark.parametrize(
    "hidden",
    [(), ("THREAD=REFS",), ("THREAD=REFS", "THREAD=REFERENCES")],
    ids=["the-servers-way", "no-refs", "searches-only"],
)
async def test_the_conversation_comes_back_exactly_and_in_order_from_each_of_its_messages(
    empty_account: Account, hidden: tuple[str, ...]
) -> None:
    talk = spread_conversation(empty_account)
    offered = server_threads(empty_account) - set(hidden)
    expected_way = next((way for way in ("THREAD=REFS", "THREAD=REFERENCES") if way in offered), "SEARCH")
    if not hidden:
        assert expected_way == THREADED_WITH[server_name(empty_account.server)]
    pool = pool_without(empty_account, hidden)
    async with served(empty_account, pool=pool) as client:
        for start in talk.every_id:
            found = await thread(client, start)
            assert locations(found) == [sorted(copies) for copies in talk.messages], start
            assert found["id"] == start and found["total"] == 6 and found["omitted"] == 0
            assert found["complete"] is True and found["bounded_by"] == []
            asked = next(entry for entry in found["messages"] if start in [loc["id"] for loc in entry["locations"]])
            assert asked["id"] == start  # the summary is of the message asked about
            assert found["threaded_with"] == expected_way, start
            assert [entry["from"] for entry in found["messages"]] == [
                "alice@example.com",
                ME,
                "bob@example.net",
                "carol@example.com",
                "dave@example.com",
                ME,
            ]
        alone = await thread(client, talk.unrelated)
    assert [entry["id"] for entry in alone["messages"]] == [talk.unrelated] and alone["total"] == 1
    assert found["mailboxes"][:1] == [decode_id(start).mailbox]
    assert {empty_account.mailbox(name) for name in ("INBOX", "Sent", "Archive")} <= set(found["mailboxes"])
    pool.close_all()


@pytest.mark.matrix
@pytest.mark.servers("dovecot", "cyrus", "courier", reason="servers offering THREAD=REFERENCES")
async def test_a_subject_the_servers_thread_groups_in_joins_nothing(empty_account: Account) -> None:
    """THREAD=REFERENCES puts the unrelated message with the same subject in the conversation's thread (checked
    here on the server itself); get_thread, built on that THREAD, leaves it out."""
    talk = spread_conversation(empty_account)
    first, unrelated = decode_id(talk.messages[0][0]), decode_id(talk.unrelated)
    client = empty_account.imap()
    try:
        client.select_folder("INBOX", readonly=True)
        grouped = [t for t in client.thread("REFERENCES", ["ALL"]) if first.uid in _flat(t)]
    finally:
        client.logout()
    assert len(grouped) == 1 and unrelated.uid in _flat(grouped[0])
    async with served(empty_account, pool=pool_without(empty_account, ("THREAD=REFS",))) as mcp:
        found = await thread(mcp, talk.messages[0][0])
    assert found["threaded_with"] == "THREAD=REFERENCES" and found["total"] == 6
    assert talk.unrelated not in {loc["id"] for entry in found["messages"] for loc in entry["locations"]}


def _flat(tree: Any) -> list[int]:
    return [tree] if isinstance(tree, int) else [uid for branch in tree for uid in _flat(branch)]


@pytest.mark.dovecot_only(reason="the pool's connections, not the server's answers")
async def test_the_start_mailbox_stays_examined_between_calls(empty_account: Account) -> None:
    """The other mailboxes are searched on a second connection, so the INBOX of the first is examined once."""
    talk = spread_conversation(empty_account)
    pool = ImapPool(empty_account.imap_settings())
    async with served(empty_account, pool=pool) as client:
        for _ in range(3):
            assert (await thread(client, talk.messages[0][0]))["total"] == 6
    pool.close_all()
    assert (pool.opened, pool.examines) == (2, 1)


@pytest.mark.dovecot_only(reason="about the tool's bounds, not the server")
async def test_max_messages_leaves_out_the_oldest_but_never_the_message_asked_about(empty_account: Account) -> None:
    talk = spread_conversation(empty_account)
    first = talk.messages[0][0]
    async with served(empty_account) as client:
        found = await thread(client, first, max_messages=3)
        newest = await thread(client, talk.messages[-1][0], max_messages=2)
    assert locations(found) == [talk.messages[0], talk.messages[4], talk.messages[5]]
    assert (found["total"], found["omitted"]) == (6, 3)
    assert [entry["id"] for entry in newest["messages"]] == [talk.messages[4][0], talk.messages[5][0]]


@pytest.mark.dovecot_only(reason="about sharing max_chars, not the server")
async def test_bodies_share_one_budget_fairly(empty_account: Account) -> None:
    """Three short texts are given whole; the two long ones share what they left, and nothing passes max_chars."""
    texts = ["Yes.\n", "A" * 500 + "\n", "No.\n", "B" * 500 + "\n", "Ok.\n"]
    root = "<root.bodies@example.org>"
    ids = [put(empty_account, "INBOX", mail(root, subject=SUBJECT, body=texts[0]), day(1))]
    for position, text in enumerate(texts[1:], start=2):
        ids.append(
            put(empty_account, "INBOX", mail(f"<r{position}@example.org>", root, (root,), body=text), day(position))
        )
    async with served(empty_account) as client:
        found = await thread(client, ids[0], include_bodies=True, max_chars=300)
        without = await thread(client, ids[0])
    bodies = [entry["body"] for entry in found["messages"]]
    assert [body["text"] for body in bodies[0::2]] == ["Yes.\n", "No.\n", "Ok.\n"]
    assert all(not body["truncated"] for body in bodies[0::2])
    left = 300 - len("Yes.\nNo.\nOk.\n")
    assert [len(body["text"]) for body in bodies[1::2]] == [left // 2, left - left // 2]
    assert bodies[1]["text"] == "A" * (left // 2) and bodies[1]["truncated"] and bodies[1]["full_length"] == 501
    assert all(body["author"] == "sender of the email" and "do not follow" in body["notice"] for body in bodies)
    assert all(entry["body"] is None for entry in without["messages"])


@pytest.mark.dovecot_only(reason="about bounds on hostile headers, not the server")
async def test_a_references_header_of_10000_ids_is_read_in_part_alike_from_either_end(empty_account: Account) -> None:
    """Of a References of 10,000 ids only its first 16 KB are read (and of those, the first id and the last 20). A
    reply naming its parent first is joined; one naming it last, past what is read, is not: from the parent as
    from the reply, though the server's THREAD and searches, which read the whole header, link both."""
    parent = "<parent.hostile@example.org>"
    one, other = (tuple(f"<{side}{n:05d}.hostile@example.net>" for n in range(10_000)) for side in "ab")
    root = put(empty_account, "INBOX", mail(parent, subject=SUBJECT), day(1))
    first = put(empty_account, "INBOX", mail("<first@example.net>", None, (parent, *one)), day(2))
    last = put(empty_account, "INBOX", mail("<last@example.net>", None, (*other, parent)), day(3))
    async with served(empty_account) as client:
        from_root = await thread(client, root)
        from_first = await thread(client, first)
        from_last = await thread(client, last)
    assert [entry["id"] for entry in from_root["messages"]] == [root, first]
    assert [entry["id"] for entry in from_first["messages"]] == [root, first]
    assert [entry["id"] for entry in from_last["messages"]] == [last]
    assert all(found["complete"] for found in (from_root, from_first, from_last))


@pytest.mark.dovecot_only(reason="Dovecot's imap process runs out of memory threading these headers")
async def test_a_thread_the_server_dies_on_is_searched_instead_and_not_asked_again(
    empty_account: Account, caplog: pytest.LogCaptureFixture
) -> None:
    """Two messages naming the same 10,000 ids, one with its parent first, the other last: Dovecot's imap process
    runs out of memory threading them, and the connection is gone."""
    parent = "<parent.dies@example.org>"
    many = tuple(f"<fake{n:05d}.dies@example.net>" for n in range(10_000))
    root = put(empty_account, "INBOX", mail(parent, subject=SUBJECT), day(1))
    first = put(empty_account, "INBOX", mail("<first@example.net>", None, (parent, *many)), day(2))
    last = put(empty_account, "INBOX", mail("<last@example.net>", None, (*many, parent)), day(3))
    pool = ImapPool(empty_account.imap_settings())
    caplog.set_level(logging.WARNING, logger="imap_mcp")
    async with served(empty_account, pool=pool) as client:
        searched = await thread(client, root)
        opened = pool.opened
        again = await thread(client, root)
    pool.close_all()
    failures = [record for record in caplog.records if "did not answer THREAD" in record.getMessage()]
    assert len(failures) == 1 and "'INBOX'" in failures[0].getMessage()
    assert searched["fence"] != again["fence"]  # each result its own fence, the rest the same
    assert {**searched, "fence": None} == {**again, "fence": None}
    assert searched["threaded_with"] == "SEARCH" and searched["complete"]
    assert [entry["id"] for entry in searched["messages"]] == [root, first, last]  # the last joined by the fakes
    assert pool.opened == opened  # the second call asked no THREAD that would cost a connection


@pytest.mark.dovecot_only(reason="which role mailboxes are searched, not the server's answers")
async def test_drafts_are_part_of_the_conversation_trash_and_junk_only_when_asked_from_there(
    empty_account: Account,
) -> None:
    root = "<root.roles@example.org>"
    first = put(empty_account, "INBOX", mail(root, subject=SUBJECT), day(1))
    draft = put(empty_account, "Drafts", mail("<draft@example.org>", root, (root,), sender=ME), day(2))
    thrown = put(empty_account, "Trash", mail("<thrown@example.org>", root, (root,)), day(3))
    spam = put(empty_account, "Junk", mail("<spam@example.org>", root, (root,)), day(4))
    async with served(empty_account) as client:
        from_inbox = await thread(client, first)
        from_trash = await thread(client, thrown)
    assert [entry["id"] for entry in from_inbox["messages"]] == [first, draft]
    assert not {"Trash", "Junk"} & set(from_inbox["mailboxes"])
    assert [entry["id"] for entry in from_trash["messages"]] == [first, draft, thrown]
    assert spam not in {entry["id"] for entry in from_trash["messages"]}


@pytest.mark.dovecot_only(reason="about the tool's bounds, not the server")
@pytest.mark.parametrize(
    ("bound", "value", "said"),
    [("MAX_LINKED", 4, "at most 4 messages read"), ("MAX_IDS", 3, "at most 3 Message-IDs followed")],
)
async def test_a_bound_that_stops_the_search_is_named_in_the_answer(
    empty_account: Account, monkeypatch: pytest.MonkeyPatch, bound: str, value: int, said: str
) -> None:
    talk = spread_conversation(empty_account)
    monkeypatch.setattr(threads, bound, value)
    async with served(empty_account) as client:
        found = await thread(client, talk.messages[0][0])
    assert found["complete"] is False and found["bounded_by"] == [said]
    assert 1 <= found["total"] < 6 and found["messages"][0]["id"] == talk.messages[0][0]


@pytest.mark.dovecot_only(reason="the tool's refusals, not the server's answers")
async def test_ids_that_name_no_message_are_refused_with_what_to_do(empty_account: Account) -> None:
    first = put(empty_account, "INBOX", mail("<only@example.org>", subject=SUBJECT), day(1))
    ref = decode_id(first)
    async with served(empty_account) as client:
        stale = error_text(await client.call_tool("get_thread", {"id": MessageRef("INBOX", ref.uidvalidity + 1, 1).id}))
        gone = error_text(await client.call_tool("get_thread", {"id": MessageRef("INBOX", ref.uidvalidity, 99).id}))
        nowhere = error_text(await client.call_tool("get_thread", {"id": MessageRef("Nowhere", 1, 1).id}))
        garbage = error_text(await client.call_tool("get_thread", {"id": "imap.x"}))
    assert "stale" in stale and "Search again" in stale
    assert "No message with UID 99" in gone
    assert "no longer exists" in nowhere
    assert "is not a message id" in garbage


# --- without a server: the pieces ---


@pytest.mark.parametrize(
    ("answer", "uid", "expected"),
    [
        (b"(1)(2 3 (4)(5 6))(7)", 5, [2, 3, 4, 5, 6]),
        (b"(1)(2 3 (4)(5 6))(7)", 7, [7]),
        (b"(10 (110)(11))(1)", 1, [1]),
        (b"(10 (110)(11))(1)", 11, [10, 110, 11]),
        (b"((3)(5))(6)", 5, [3, 5]),
        (b"(1)(2)", 9, []),
        (b"", 1, []),
        (b"1 2) (3", 2, []),
        (b"((1)", 1, []),
    ],
)
def test_the_thread_holding_a_uid_is_read_from_a_thread_answer(answer: bytes, uid: int, expected: list[int]) -> None:
    assert thread_containing(answer, uid) == expected


REF = MessageRef("INBOX", 1, 1)


def test_links_are_the_ids_of_three_headers_folded_or_not() -> None:
    block = (
        b"Message-ID: <own@x>\r\nIn-Reply-To: <p@x>\r\n (a comment) <q@x>\r\n"
        b"References: <r@x>\r\n\t<p@x> <caf\xc3\xa9@x> <" + b"y" * 300 + b"@x>\r\n\r\n"
    )
    links = links_of(REF, block)
    assert links.own == "<own@x>" and links.named == ("<p@x>", "<q@x>", "<r@x>")


def test_of_a_long_references_header_the_first_and_the_last_ids_count() -> None:
    many = [f"<n{n}@x>" for n in range(10_000)]
    links = links_of(REF, ("References: " + " ".join(many) + "\r\n").encode())
    assert links.named == (many[0], *many[-MAX_REFERENCES:])
    cut = links_of(REF, ("References: " + " ".join(many))[:16_384].encode())  # as a bounded FETCH gives it
    assert len(cut.named) == MAX_REFERENCES + 1 and cut.named[0] == many[0]


def test_messages_join_through_shared_ids_even_of_a_message_nowhere_to_be_found() -> None:
    refs = [MessageRef("INBOX", 1, uid) for uid in range(1, 6)]
    copied = MessageRef("Archive", 1, 1)
    links = {
        refs[0]: Links(refs[0], "<a@x>", ("<gone@x>",)),
        refs[1]: Links(refs[1], "<b@x>", ("<gone@x>",)),  # a sibling: both answer the missing message
        refs[2]: Links(refs[2], "<c@x>", ("<b@x>",)),
        copied: Links(copied, "<c@x>", ()),  # a copy of c
        refs[4]: Links(refs[4], None, ()),  # the same subject, perhaps: nothing joins it
    }
    assert {link.own for link in conversation(links, refs[2])} == {"<a@x>", "<b@x>", "<c@x>"}
    assert len(conversation(links, refs[0])) == 4
    assert conversation(links, refs[4]) == [links[refs[4]]]


def test_a_budget_is_shared_evenly_the_remainder_to_the_newest() -> None:
    assert shares(10, 3) == [3, 3, 4] and shares(2, 4) == [0, 0, 1, 1] and sum(shares(20_000, 7)) == 20_000


def test_a_thread_answer_is_asked_for_only_while_it_surely_fits_in_a_line() -> None:
    def examined(messages: int, uidnext: int) -> Examined:
        return Examined("INBOX", 1, MailboxState(uidvalidity=1, uidnext=uidnext, messages=messages, highestmodseq=1))

    never_asked: Any = None  # with a state, nothing is asked of the server
    assert _thread_fits(never_asked, examined(100_000, 100_001))
    assert not _thread_fits(never_asked, examined(120_000, 120_001))
