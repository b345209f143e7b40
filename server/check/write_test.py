"""`imap-mcp check --write-test`: prove in two scratch mailboxes what the read-only steps concluded.

The read-only steps believe what the server announces (capabilities, PERMANENTFLAGS); a server may
announce what it does not do (take a keyword, answer OK and keep nothing). The write test runs the
tools' own code on a message of its own, in two mailboxes it creates (`imap-mcp-check-<random>`
and `…-b`, in the personal namespace) and removes at the end, whatever happened. It touches
nothing else: no other mailbox is selected read-write, and every change names the scratch
message's UID. In order: APPEND with the flags of a draft and a keyword (a draft, a Sent copy),
STORE a flag and a keyword and read them back (set_message_flags), the last look of
list_new_messages twice, COPY to the other mailbox, MOVE back (or COPY + UID EXPUNGE without
MOVE), and a permanent delete (UID EXPUNGE). A step imap-mcp refuses on this server is "refused"
as the tool would refuse it, and not sent.

Then the account's own Trash, Sent and Drafts are opened read-write (SELECT, left at once without an
expunge; nothing is written to them): a mailbox the tools write to that opens read-only makes the uses
writing there fail, whatever the scratch mailboxes showed. Last, the scratch mailboxes are deleted and
the mailbox list read again: one still there is named, with how to remove it.

Each step is a line; what it proves (`Proof`) goes to the tool lines that rely on it.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from email.message import EmailMessage
from email.utils import format_datetime
from typing import Literal

from ..changes.flags import set_flags
from ..changes.messages import ChangeRefused, Execution, MessageOperation, execute_message_change, plan_message_change
from ..config import ImapSettings
from ..errors import MailboxError
from ..imap.connection import close, connect
from ..imap.failures import LIBRARY_ERRORS, explain
from ..imap.kept_flags import append_and_read_back, said_kept
from ..imap.lookup import MessageSelection
from ..imap.mailboxes import Role, delete_mailbox, list_mailboxes, mailbox_with_role, personal_name
from ..imap.selection import leave
from ..imap.session import Session
from ..outgoing.drafts import DRAFT_FLAGS
from ..reading.new_messages import LISTED, KeywordsNotKept, list_new
from ..tools.needs import KeptKeyword, ServerFacts
from .steps import Step

#: the step names, in order
STEPS = (
    "IMAP scratch",
    "IMAP APPEND",
    "IMAP STORE",
    "IMAP last look",
    "IMAP COPY",
    "IMAP MOVE",
    "IMAP UID EXPUNGE",
    "IMAP roles opened",
    "IMAP clean-up",
)
#: the keywords of the scratch message: one given to APPEND, one set by STORE
APPENDED_KEYWORD = "$ImapMcpCheckAppended"
STORED_KEYWORD = "$ImapMcpCheckStored"
#: the tool uses (`Readiness.name`) each step proves
PROVES = {
    "IMAP APPEND": ("save_draft", "send_message (save_to_sent: true)", "reply_to_message (save_to_sent: true)"),
    "IMAP last look": ("list_new_messages",),
    "IMAP COPY": ("move_messages (mode: copy)",),
    "IMAP MOVE": ("move_messages (mode: move)", "delete_messages (permanent: false)"),
    "IMAP UID EXPUNGE": ("delete_messages (permanent: true)",),
}
#: the tool uses that write to the mailbox of each role: they fail where it opens read-only
WRITES_TO: dict[Role, tuple[str, ...]] = {
    "trash": ("delete_messages (permanent: false)",),
    "sent": (
        "send_message (save_to_sent: true)",
        "reply_to_message (save_to_sent: true)",
        "send_draft (save_to_sent: true)",
        "forward_message (save_to_sent: true)",
    ),
    "drafts": ("save_draft", "update_draft"),
}


@dataclass(frozen=True)
class Proof:
    """What a step showed about a tool use: it ran and did what it says, imap-mcp refused it (as the tool would),
    or it ran and the server did not do it."""

    outcome: Literal["ran", "refused", "failed"]
    detail: str


class NotDone(MailboxError):
    """A write step ran and the server did not do what it answered OK to; the message says what it found."""


class NotTried(MailboxError):
    """A write step cannot run: an earlier one did not leave what it needs; the message names that step."""


@dataclass
class Scratch:
    """The scratch mailboxes, the message in them, and what each step showed."""

    client: Session
    account: str
    facts: ServerFacts
    token: str = field(default_factory=lambda: secrets.token_hex(4))
    created: list[str] = field(default_factory=list)
    #: mailbox -> (UIDVALIDITY, UIDs of the scratch message and its copies there)
    held: dict[str, tuple[int, tuple[int, ...]]] = field(default_factory=dict)
    proofs: dict[str, Proof] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.first = personal_name(self.client, f"imap-mcp-check-{self.token}")
        self.second = personal_name(self.client, f"imap-mcp-check-{self.token}-b")

    def prove(self, step: str, proof: Proof, uses: tuple[str, ...] = ()) -> None:
        for use in uses or PROVES.get(step, ()):
            self.proofs[use] = proof

    def selection(self, mailbox: str, after: str) -> MessageSelection:
        """The scratch messages in `mailbox`; `NotTried` (naming the step `after`) when it holds none."""
        if mailbox not in self.held:
            raise NotTried(f"not tried: {after} did not leave a message in {mailbox!r}")
        uidvalidity, uids = self.held[mailbox]
        return MessageSelection(mailbox, uidvalidity, uids)

    def change(self, operation: MessageOperation, selection: MessageSelection, destination: str | None) -> None:
        """Plan and run a change exactly as an approved tool call does, but for one thing: the move back goes into
        the mailbox that holds the original, which a tool's move would skip (a move never duplicates,
        `changes.messages`); what is proven here is the server's MOVE, so nothing is skipped."""
        plan = plan_message_change(self.client, self.account, selection, operation, destination)
        execute_message_change(self.client, replace(plan, already_present=()), Execution())

    def look(self, mailbox: str) -> tuple[int, tuple[int, ...]]:
        """The UIDVALIDITY of `mailbox` and the UIDs it holds (EXAMINE: it changes nothing)."""
        uidvalidity = int(self.client.select_folder(mailbox, readonly=True)[b"UIDVALIDITY"])
        return uidvalidity, tuple(sorted(self.client.search(["ALL"])))


def write_test(settings: ImapSettings, facts: ServerFacts) -> tuple[list[Step], dict[str, Proof]]:
    """The write test's lines (one per step of `STEPS`) and what it proved, by tool use (`Readiness.name`)."""
    try:
        client = connect(settings)
    except MailboxError as exc:
        return _unable(f"could not connect again: {exc}"), {}
    try:
        try:
            scratch = Scratch(client, settings.account, facts)
        except LIBRARY_ERRORS as exc:
            return _unable(str(explain(exc, settings, "asking where this account's mailboxes live"))), {}
        lines = [_attempt(scratch, settings, name, step) for name, step in zip(STEPS, STEP_FUNCTIONS, strict=False)]
        lines.append(_clean_up(scratch, settings))
    finally:
        close(client)
    return lines, scratch.proofs


def _unable(why: str) -> list[Step]:
    return [
        Step(STEPS[0], "warn", why),
        *(Step(name, "skip", f"not tried: {STEPS[0]} did not work") for name in STEPS[1:]),
    ]


def _attempt(scratch: Scratch, settings: ImapSettings, name: str, step: Callable[[Scratch], Step]) -> Step:
    """One step; imap-mcp's refusal is "not sent", the server's error or a result not kept a warning (and what the
    step was to prove failed)."""
    try:
        return step(scratch)
    except NotTried as exc:
        return Step(name, "skip", str(exc))
    except (ChangeRefused, KeywordsNotKept) as exc:
        scratch.prove(name, Proof("refused", str(exc)))
        return Step(name, "skip", f"not sent: imap-mcp refuses it on this server. {exc}")
    except MailboxError as exc:
        scratch.prove(name, Proof("failed", str(exc)))
        return Step(name, "warn", str(exc))
    except LIBRARY_ERRORS as exc:
        said = str(explain(exc, settings, f"the write test's step {name}"))
        scratch.prove(name, Proof("failed", said))
        return Step(name, "warn", said)


def _create(scratch: Scratch) -> Step:
    for mailbox in (scratch.first, scratch.second):
        scratch.client.create_folder(mailbox)
        scratch.created.append(mailbox)
    return Step("IMAP scratch", "ok", f"created {scratch.first!r} and {scratch.second!r}")


def _message(token: str) -> bytes:
    message = EmailMessage()
    message["From"] = "imap-mcp check <check@imap-mcp.invalid>"
    message["To"] = "check@imap-mcp.invalid"
    message["Subject"] = "imap-mcp check --write-test"
    message["Date"] = format_datetime(dt.datetime.now(dt.UTC))
    message["Message-ID"] = f"<check-{token}@imap-mcp.invalid>"
    message.set_content("Appended by `imap-mcp check --write-test` to a mailbox it created, and removed with it.\n")
    return bytes(message)


def _append(scratch: Scratch) -> Step:
    """APPEND with a draft's flags, and a keyword where the mailbox says it keeps keywords; read back."""
    if len(scratch.created) < 2:
        raise NotTried("not tried: IMAP scratch did not create both mailboxes")
    flags = (*DRAFT_FLAGS, APPENDED_KEYWORD.encode()) if KeptKeyword().met(scratch.facts) else DRAFT_FLAGS
    message_id = f"<check-{scratch.token}@imap-mcp.invalid>"
    appended = append_and_read_back(scratch.client, scratch.first, _message(scratch.token), flags, None, message_id)
    if appended.uid is None:
        raise NotDone(f"the APPEND to {scratch.first!r} was answered OK, and the message cannot be found there")
    scratch.held[scratch.first] = (appended.uidvalidity, (appended.uid,))
    named = " ".join(flag.decode() for flag in flags)
    lost = " ".join(flag.decode() for flag in flags if not appended.kept(flag))
    if any(not appended.kept(flag) for flag in DRAFT_FLAGS):
        scratch.prove(
            "IMAP APPEND", Proof("failed", f"APPEND with {named} (and a STORE after it) kept nothing of {lost}")
        )
    else:
        scratch.prove("IMAP APPEND", Proof("ran", f"APPEND with {' '.join(f.decode() for f in DRAFT_FLAGS)}"))
    if lost:
        return Step("IMAP APPEND", "warn", f"APPEND with {named} (and a STORE after it) kept nothing of {lost}")
    return Step("IMAP APPEND", "ok", f"APPEND with {named}: every flag kept (read back)")


def _store(scratch: Scratch) -> Step:
    """STORE a flag, then a keyword, exactly as set_message_flags does; what the server kept, read back."""
    selection = scratch.selection(scratch.first, "IMAP APPEND")
    flags = set_flags(scratch.client, selection, ["\\Flagged"], [])
    if flags.added != ("\\Flagged",):
        raise NotDone("STORE +FLAGS \\Flagged was answered OK and the flag is not there when read back")
    scratch.prove("IMAP STORE", Proof("ran", "STORE \\Flagged, read back"), ("set_message_flags (flags)",))
    keywords = ("set_message_flags (keywords)",)
    try:
        report = set_flags(scratch.client, selection, [STORED_KEYWORD], [])
    except ChangeRefused as exc:
        scratch.prove("IMAP STORE", Proof("refused", str(exc)), keywords)
        return Step("IMAP STORE", "ok", f"\\Flagged kept (read back); {STORED_KEYWORD} not sent: it is not kept here")
    if report.added != (STORED_KEYWORD,):
        said = f"STORE {STORED_KEYWORD} was answered OK and the keyword is not there when read back"
        scratch.prove("IMAP STORE", Proof("failed", said), keywords)
        return Step("IMAP STORE", "warn", f"\\Flagged kept; {said}")
    scratch.prove("IMAP STORE", Proof("ran", f"STORE {STORED_KEYWORD}, read back"), keywords)
    return Step("IMAP STORE", "ok", f"\\Flagged and {STORED_KEYWORD} kept (read back)")


def _last_look(scratch: Scratch) -> Step:
    """list_new_messages on the scratch mailbox, twice: the message is new once, then listed."""
    uids = list(scratch.selection(scratch.first, "IMAP APPEND").uids)
    first = list_new(scratch.client, scratch.first, 0, 20)
    if [m.uid for m in first.messages] != uids:
        raise NotDone(f"list_new_messages listed {len(first.messages)} messages of the 1 new in {scratch.first!r}")
    if list_new(scratch.client, scratch.first, 0, 20).total:
        raise NotDone(
            f"the keyword {LISTED.decode()} was answered OK and not kept: list_new_messages would list the same "
            "messages at every call"
        )
    scratch.prove("IMAP last look", Proof("ran", "listed the new message once, then not again"))
    return Step("IMAP last look", "ok", "list_new_messages listed the message once, then not again")


def _copy(scratch: Scratch) -> Step:
    scratch.change("copy", scratch.selection(scratch.first, "IMAP APPEND"), scratch.second)
    copied = scratch.look(scratch.second)
    if len(copied[1]) != 1:
        raise NotDone(f"the COPY to {scratch.second!r} was answered OK and {len(copied[1])} messages are there")
    scratch.held[scratch.second] = copied
    scratch.prove("IMAP COPY", Proof("ran", f"copied into {scratch.second!r}"))
    return Step("IMAP COPY", "ok", f"copied into {scratch.second!r}")


def _move(scratch: Scratch) -> Step:
    how = "MOVE" if "MOVE" in scratch.facts.capabilities else "COPY, then UID EXPUNGE of exactly it"
    scratch.change("move", scratch.selection(scratch.second, "IMAP COPY"), scratch.first)
    left, arrived = scratch.look(scratch.second)[1], scratch.look(scratch.first)
    if left or len(arrived[1]) != 2:
        raise NotDone(
            f"the move ({how}) was answered OK and left {len(left)} message(s) in {scratch.second!r}, "
            f"{len(arrived[1])} in {scratch.first!r} (1 and 2 expected)"
        )
    scratch.held[scratch.first] = arrived
    scratch.prove("IMAP MOVE", Proof("ran", f"moved back ({how})"))
    return Step("IMAP MOVE", "ok", f"moved back into {scratch.first!r} ({how})")


def _expunge(scratch: Scratch) -> Step:
    held = scratch.selection(scratch.first, "IMAP APPEND")
    oldest, *rest = held.uids
    scratch.change("delete_permanently", replace(held, uids=(oldest,)), None)
    left = scratch.look(scratch.first)[1]
    if list(left) != rest:
        raise NotDone(f"UID EXPUNGE of UID {oldest} was answered OK and left {list(left)} (expected {rest})")
    scratch.prove("IMAP UID EXPUNGE", Proof("ran", "deleted for good exactly that message"))
    return Step("IMAP UID EXPUNGE", "ok", f"deleted UID {oldest} for good, and only it")


def _role_mailboxes(scratch: Scratch) -> Step:
    """Open the account's Trash, Sent and Drafts read-write, as the tools that write there do; nothing is written.
    One that opens read-only fails the uses that write to it (`WRITES_TO`), whatever the scratch steps proved."""
    opened: list[str] = []
    read_only: list[str] = []
    for role, uses in WRITES_TO.items():
        mailbox = mailbox_with_role(scratch.client, role)
        if mailbox is None:
            continue  # the tool lines already say what its absence does
        if said_kept(scratch.client, mailbox)[0]:
            said = f"the {role.title()} mailbox {mailbox!r} opens read-only for this login (SELECT said READ-ONLY)"
            scratch.prove("IMAP roles opened", Proof("failed", f"{said}: nothing can be put there"), uses)
            read_only.append(said)
        else:
            opened.append(f"{role.title()} {mailbox!r}")
    if read_only:
        return Step("IMAP roles opened", "warn", "; ".join(read_only) + ". Ask the server's administrator why.")
    if not opened:
        return Step("IMAP roles opened", "ok", "no Trash, Sent or Drafts to open")
    return Step("IMAP roles opened", "ok", f"opened read-write: {', '.join(opened)}; nothing written")


STEP_FUNCTIONS: tuple[Callable[[Scratch], Step], ...] = (
    _create,
    _append,
    _store,
    _last_look,
    _copy,
    _move,
    _expunge,
    _role_mailboxes,
)


def _clean_up(scratch: Scratch, settings: ImapSettings) -> Step:
    """Delete the scratch mailboxes (whatever happened before), then read the mailbox list again: a warning
    naming each that is still there, with how to remove it."""
    refused: dict[str, str] = {}
    for mailbox in scratch.created:
        try:
            leave(scratch.client, mailbox)
            delete_mailbox(scratch.client, mailbox)
        except LIBRARY_ERRORS as exc:
            refused[mailbox] = str(explain(exc, settings, f"deleting {mailbox!r}"))
    if not scratch.created:
        return Step("IMAP clean-up", "ok", "nothing to remove")
    try:
        listed = {found.name for found in list_mailboxes(scratch.client)}
    except LIBRARY_ERRORS as exc:
        said = explain(exc, settings, "reading the mailbox list again")
        names = " and ".join(repr(m) for m in scratch.created)
        return Step("IMAP clean-up", "warn", f"could not tell whether {names} are gone ({said}); {_REMOVE}")
    stays = [f"{m!r}" + (f" ({refused[m]})" if m in refused else "") for m in scratch.created if m in listed]
    if stays:
        return Step("IMAP clean-up", "warn", f"still there: {', '.join(stays)}; {_REMOVE}")
    return Step("IMAP clean-up", "ok", f"removed {' and '.join(repr(m) for m in scratch.created)} (listed no more)")


#: how to remove a scratch mailbox the clean-up left
_REMOVE = "remove it with a mail client, or with manage_mailbox (action delete); it holds only the check's own message"
