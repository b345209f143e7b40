"""`get_thread` with `include_bodies`: each message's text, all of them within one `max_chars`.

The budget is shared fairly: every message first gets an equal share (what does not divide goes to
the newest), and what the short ones leave over is shared among those that were cut, which are read
again with their larger share. So one long message cannot crowd out the others, and no share is
wasted on a one-line reply. The text is the one `get_message` shows (`reader.fetch_message`, HTML
converted after the connection went back to the pool), read from the entry's first location.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import anyio.to_thread

from ..imap.lookup import MessageSelection
from ..imap.message_ids import decode_id
from ..imap.pool import Examined, NoSuchMailbox, examine
from ..imap.session import Session
from .reader import FetchedMessage, MessageContent, MessageGone, MessageUnreadable, fetch_message, message_content
from .threads import ReadElsewhere, ReadStartMailbox, Thread, ThreadBody


def shares(budget: int, count: int) -> list[int]:
    """`budget` split among `count` as evenly as it goes, the remainder to the last ones (the newest)."""
    base, extra = divmod(budget, count)
    return [base + (1 if position >= count - extra else 0) for position in range(count)]


def _read_in(client: Session, examined: Examined, wanted: Mapping[str, int]) -> dict[str, FetchedMessage]:
    """Each wanted message of the selected mailbox (id -> characters allowed); one gone or unreadable is left out."""
    found: dict[str, FetchedMessage] = {}
    for message_id, allowed in wanted.items():
        ref = decode_id(message_id)
        try:
            found[message_id] = fetch_message(
                client, examined, MessageSelection(ref.mailbox, ref.uidvalidity, (ref.uid,)), allowed
            )
        except (MessageGone, MessageUnreadable):
            continue
    return found


async def _read(
    in_start_mailbox: ReadStartMailbox, elsewhere: ReadElsewhere, start_mailbox: str, allowed: Mapping[str, int]
) -> dict[str, MessageContent]:
    """The texts of the messages `allowed` names (id -> characters), converted off the event loop."""
    by_mailbox: dict[str, dict[str, int]] = defaultdict(dict)
    for message_id, chars in allowed.items():
        by_mailbox[decode_id(message_id).mailbox][message_id] = chars
    fetched: dict[str, FetchedMessage] = {}

    def in_start(client: Session, examined: Examined) -> None:
        fetched.update(_read_in(client, examined, by_mailbox[start_mailbox]))

    def in_others(client: Session) -> None:
        for mailbox, wanted in by_mailbox.items():
            if mailbox != start_mailbox:
                try:
                    fetched.update(_read_in(client, examine(client, mailbox), wanted))
                except NoSuchMailbox:
                    continue

    if start_mailbox in by_mailbox:
        await in_start_mailbox(in_start)
    if set(by_mailbox) - {start_mailbox}:
        await elsewhere(in_others)

    def convert() -> dict[str, MessageContent]:
        return {message_id: message_content(message, allowed[message_id]) for message_id, message in fetched.items()}

    return await anyio.to_thread.run_sync(convert)


def _body(content: MessageContent) -> ThreadBody:
    return ThreadBody(
        text=content.body.text,
        body_format=content.body_format,
        truncated=content.truncated,
        full_length=content.full_length,
    )


async def add_bodies(
    thread: Thread, in_start_mailbox: ReadStartMailbox, elsewhere: ReadElsewhere, max_chars: int
) -> None:
    """Give each message of `thread` its text, `max_chars` characters in all (see the module's doc).

    A message whose share is nothing (more messages than characters), or that is gone or cannot be read,
    gets none.
    """
    if not thread.messages:
        return
    start_mailbox = decode_id(thread.id).mailbox
    allowed = {
        m.id: share for m, share in zip(thread.messages, shares(max_chars, len(thread.messages)), strict=True) if share
    }
    texts = await _read(in_start_mailbox, elsewhere, start_mailbox, allowed)
    left = sum(allowed.values()) - sum(len(content.body.text) for content in texts.values())
    cut = [m.id for m in thread.messages if m.id in texts and texts[m.id].truncated]
    if left > 0 and cut:
        more = {
            message_id: allowed[message_id] + extra
            for message_id, extra in zip(cut, shares(left, len(cut)), strict=True)
        }
        texts |= await _read(in_start_mailbox, elsewhere, start_mailbox, more)
    for message in thread.messages:
        if message.id in texts:
            message.body = _body(texts[message.id])
