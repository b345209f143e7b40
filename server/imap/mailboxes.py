"""Listing mailboxes, their roles, and the personal namespace.

A mailbox's role comes from, in this order (`MailboxInfo.role_from` says which):
- a setting (`IMAP_MAILBOX_TRASH`, ...: `imap.role_settings`): the user's word wins over what the
  server says; a setting naming a mailbox the account does not have leaves the role without one
  (no other mailbox is put in its place) and the advice names the setting;
- its SPECIAL-USE attribute (RFC 6154), or where the server does not offer SPECIAL-USE its XLIST
  attribute (the older Gmail-era extension);
- for a role neither gave, its name, in any of the languages of `imap.role_names` (`Papierkorb`,
  `Отправленные`, `Deleted Items`, ...), compared case-insensitively after the personal
  namespace's prefix and delimiter and an `INBOX`, `[Gmail]` or `[Google Mail]` parent
  (`INBOX.Gesendet`, `INBOX/Sent`). Names arrive in modified UTF-7 (`Entw&APw-rfe`) and are
  compared decoded (`Entwürfe`).
`mailbox_with_role` is the one lookup every tool uses.

The personal namespace (RFC 2342 NAMESPACE) says where this account's own mailboxes live:
Dovecot and Cyrus put them at the top level, Courier under `INBOX.`. New names must be in a
namespace (`check_new_name`), and advice to create a mailbox names it the server's way
(`personal_name`).
"""

from __future__ import annotations

import imaplib
import time
import weakref
from dataclasses import dataclass
from typing import Literal

from imapclient.exceptions import IMAPClientError
from pydantic import BaseModel, Field

from ..errors import MailboxError
from .role_names import COMPARABLE_NAMES, ROLE_PARENTS, ROLE_SETTINGS, NamedRole, comparable
from .session import Session

Role = Literal["inbox", "sent", "drafts", "trash", "junk", "archive", "all", "flagged", "none"]
#: where a mailbox's role came from (see the module's doc)
RoleFrom = Literal["setting", "special-use", "xlist", "name"]

SPECIAL_USE_ROLES: dict[bytes, Role] = {
    b"\\sent": "sent",
    b"\\drafts": "drafts",
    b"\\trash": "trash",
    b"\\junk": "junk",
    b"\\archive": "archive",
    b"\\all": "all",
    b"\\flagged": "flagged",
}
#: XLIST's own attributes for the same roles (Gmail's; XLIST also sends \Sent, \Drafts, \Trash)
XLIST_ROLES: dict[bytes, Role] = {**SPECIAL_USE_ROLES, b"\\spam": "junk", b"\\allmail": "all", b"\\starred": "flagged"}
#: the name `personal_name` suggests for a role that is missing
USUAL_NAME: dict[Role, str] = {
    "sent": "Sent",
    "drafts": "Drafts",
    "trash": "Trash",
    "junk": "Junk",
    "archive": "Archive",
}
NOT_SELECTABLE = {b"\\noselect", b"\\nonexistent"}


class MailboxInfo(BaseModel):
    name: str = Field(description="Full mailbox name, decoded to readable text; pass it to other tools as is.")
    delimiter: str | None = Field(description="Hierarchy delimiter, e.g. '/' or '.'; null for a flat name.")
    role: Role = Field(
        description="What the mailbox is for: from a setting (IMAP_MAILBOX_TRASH, ...), else SPECIAL-USE (or XLIST), "
        "else a usual name in one of many languages ('Sent Items', 'Papierkorb', 'Отправленные'); 'none' for an "
        "ordinary one."
    )
    role_from: RoleFrom | None = Field(
        default=None,
        description="Where the role came from: setting (IMAP_MAILBOX_*), special-use, xlist, or name; null for none "
        "and for INBOX.",
    )
    selectable: bool = Field(description="Whether the mailbox can hold messages (false for a pure folder).")
    messages: int | None = Field(default=None, description="Number of messages (only when counts are asked).")
    unread: int | None = Field(default=None, description="Number of unread messages (only with counts).")


@dataclass(frozen=True)
class Namespaces:
    """The personal namespace's prefix and delimiter, and every namespace's prefix (RFC 2342)."""

    prefix: str
    delimiter: str | None
    all_prefixes: tuple[str, ...]

    def relative(self, name: str) -> str:
        """`name` without the personal prefix (compared case-insensitively, as INBOX is)."""
        if self.prefix and name.lower().startswith(self.prefix.lower()):
            return name[len(self.prefix) :]
        return name

    def contains(self, name: str) -> bool:
        """Whether `name` lies in one of the account's namespaces (INBOX always does)."""
        if name.upper() == "INBOX":
            return True
        return any(name.lower().startswith(prefix.lower()) for prefix in self.all_prefixes)


#: each connection's namespaces, asked once: they do not change during a session, and some servers take
#: tens of milliseconds to answer NAMESPACE (Mailutils), which every new name and role lookup needs
_KNOWN: weakref.WeakKeyDictionary[Session, Namespaces] = weakref.WeakKeyDictionary()


def namespaces(client: Session) -> Namespaces:
    """The connection's namespaces (`_asked_namespaces`), asked once per connection."""
    known = _KNOWN.get(client)
    if known is None:
        known = _KNOWN[client] = _asked_namespaces(client)
    return known


def _asked_namespaces(client: Session) -> Namespaces:
    """NAMESPACE where offered; else one personal namespace at the top level with LIST's delimiter."""
    if client.has_capability("NAMESPACE"):
        found = client.namespace()
        personal = list(found.personal or ())
        every = [prefix for group in found for prefix, _ in (group or ())]
        if personal:
            prefix, delimiter = personal[0]
            return Namespaces(_text(prefix) or "", _text(delimiter), tuple(_text(p) or "" for p in every))
    listed = client.list_folders("", "")
    delimiter = _text(listed[0][1]) if listed else None
    return Namespaces("", delimiter, ("",))


def personal_name(client: Session, name: str) -> str:
    """`name` (levels separated by '/') as a mailbox of the personal namespace: `INBOX.Drafts` on Courier."""
    found = namespaces(client)
    if found.contains(name):
        return name
    delimiter = found.delimiter or "/"
    return found.prefix + name.replace("/", delimiter)


class OutsideNamespaces(MailboxError):
    """A new mailbox name that lies in none of the account's namespaces."""


def check_new_name(client: Session, name: str) -> None:
    """Refuse (`OutsideNamespaces`) a new mailbox name the server would not keep, saying what it expects."""
    found = namespaces(client)
    if found.contains(name):
        return
    delimiter = found.delimiter or "/"
    raise OutsideNamespaces(
        f"The mailbox name {name!r} is outside this account's mailboxes: the IMAP server keeps them under "
        f"{found.prefix!r} with {delimiter!r} between levels. Nothing was changed; use "
        f"{personal_name(client, name)!r} instead."
    )


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    return value.decode("ascii", "replace") if isinstance(value, bytes) else value


def _attribute_role(flags: tuple[bytes, ...], roles: dict[bytes, Role]) -> Role:
    return next((roles[f.lower()] for f in flags if f.lower() in roles), "none")


@dataclass
class _Listed:
    """One mailbox of LIST, with the role found for it so far and where that came from."""

    flags: tuple[bytes, ...]
    delimiter: str | None
    name: str
    role: Role
    role_from: RoleFrom | None

    @property
    def selectable(self) -> bool:
        return not ({f.lower() for f in self.flags} & NOT_SELECTABLE)


def _listed_with_attributes(client: Session) -> list[_Listed]:
    """LIST, each mailbox with the role its attributes give: LIST's (SPECIAL-USE) or, without SPECIAL-USE, XLIST's."""
    listed = client.list_folders()
    by_xlist: dict[str, Role] = {}
    if not client.has_capability("SPECIAL-USE") and client.has_capability("XLIST"):
        by_xlist = {_name(name): _attribute_role(flags, XLIST_ROLES) for flags, _, name in client.xlist_folders()}
    found = []
    for flags, delimiter, raw_name in listed:
        name = _name(raw_name)
        role = by_xlist.get(name, "none") if by_xlist else _attribute_role(flags, SPECIAL_USE_ROLES)
        source: RoleFrom | None = ("xlist" if by_xlist else "special-use") if role != "none" else None
        if name.upper() == "INBOX":
            role, source = "inbox", None
        found.append(_Listed(flags, _text(delimiter), name, role, source))
    return found


def _name(value: bytes | str) -> str:
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


#: the roles each connection's settings name (`name_roles`, called at login): a weak key, gone with the connection
_NAMED: weakref.WeakKeyDictionary[Session, tuple[tuple[NamedRole, str], ...]] = weakref.WeakKeyDictionary()


def name_roles(client: Session, roles: tuple[tuple[NamedRole, str], ...]) -> None:
    """Give `client` the mailboxes the account's settings name for roles (`ImapSettings.roles`)."""
    _NAMED[client] = roles


def _named_by_settings(client: Session, listed: list[_Listed]) -> None:
    """Give each role a setting names to the mailbox it names (taking it from any other), in place."""
    for role, wanted in _NAMED.get(client, ()):
        names = {wanted, personal_name(client, wanted)}
        chosen = next((m for m in listed if m.name in names and m.selectable), None)
        for mailbox in listed:
            if mailbox.role == role:
                mailbox.role, mailbox.role_from = "none", None
        if chosen is not None:
            chosen.role, chosen.role_from = role, "setting"


def _comparable_name(mailbox: _Listed, space: Namespaces) -> str:
    """The name as role names are compared: without the personal prefix and a parent of `ROLE_PARENTS`."""
    name = space.relative(mailbox.name)
    for parent in ROLE_PARENTS:
        if mailbox.delimiter and comparable(name).startswith(comparable(parent + mailbox.delimiter)):
            name = name[len(parent) + len(mailbox.delimiter) :]
    return comparable(name)


def _named_by_names(listed: list[_Listed], taken: set[Role], space: Namespaces) -> None:
    """For each role neither a setting nor an attribute gave: the ordinary mailbox with its most usual name, in
    place."""
    unclaimed = [m for m in listed if m.role == "none" and m.selectable]
    compared = [(_comparable_name(m, space), m) for m in unclaimed]
    for role, usual in COMPARABLE_NAMES.items():
        if role in taken:
            continue
        for wanted in usual:
            match = next((m for name, m in compared if name == wanted and m.role == "none"), None)
            if match is not None:
                match.role, match.role_from = role, "name"
                break


def list_mailboxes(client: Session) -> list[MailboxInfo]:
    """Every mailbox the account can see with its role (see the module's doc), INBOX first, the rest in name order.

    imapclient decodes modified UTF-7 names, so `Entw&APw-rfe` comes back as `Entwürfe`.
    """
    listed = _listed_with_attributes(client)
    _named_by_settings(client, listed)
    taken: set[Role] = {m.role for m in listed} | {role for role, _ in _NAMED.get(client, ())}
    _named_by_names(listed, taken, namespaces(client))
    found = [
        MailboxInfo(name=m.name, delimiter=m.delimiter, role=m.role, role_from=m.role_from, selectable=m.selectable)
        for m in listed
    ]
    found.sort(key=lambda m: (m.role != "inbox", m.name))
    _ROLES[client] = (time.monotonic(), {m.role: m.name for m in reversed(found) if m.selectable})
    return found


#: how long a connection's last LIST answers which mailbox has a role: a guarded change asks for its Trash in the
#: question and again in the answer (minutes apart at most), and a send for its Sent, each one LIST the less. A
#: mailbox renamed since is refused by the next command on it (or is the one the person was asked about).
ROLES_KEPT_SECONDS = 300.0
_ROLES: weakref.WeakKeyDictionary[Session, tuple[float, dict[str, str]]] = weakref.WeakKeyDictionary()


def mailbox_with_role(client: Session, role: Role) -> str | None:
    """The selectable mailbox with `role` (see the module's doc for how roles are found), or None; from this
    connection's last LIST when it is recent (`ROLES_KEPT_SECONDS`)."""
    kept = _ROLES.get(client)
    if kept is None or time.monotonic() - kept[0] > ROLES_KEPT_SECONDS:
        list_mailboxes(client)
        kept = _ROLES[client]
    return kept[1].get(role)


def missing_role_advice(client: Session, role: Role) -> str:
    """What to do when no mailbox has `role`: create the one its setting names, or one named the way this server
    expects, or name the account's own in the setting (a mailbox in a language `imap.role_names` does not know)."""
    setting = next((name for named_role, name in ROLE_SETTINGS.items() if named_role == role), None)
    named = next((name for named_role, name in _NAMED.get(client, ()) if named_role == role), None)
    if setting and named:
        return (
            f"{setting} names {named!r}, which this account has no mailbox of: create it with manage_mailbox "
            f"(action create), or set {setting} to a mailbox list_mailboxes shows."
        )
    name = personal_name(client, USUAL_NAME.get(role, role.title()))
    advice = f"Create one named {name!r} with manage_mailbox (action create)."
    if setting:
        advice += f" If the account keeps its {role} mailbox under another name, set {setting} to that name."
    return advice


#: Cyrus refuses to DELETE a mailbox that was created, deleted and re-created within one second
#: (its delayed-delete copy of the first one has the same name and time); it succeeds a second later
_DELETE_AGAIN_AFTER = 1.1


def delete_mailbox(client: Session, name: str) -> None:
    """DELETE `name`, once more a second later when the server says it is busy with a same-named one (Cyrus)."""
    try:
        client.delete_folder(name)
    except imaplib.IMAP4.error as exc:
        if "already exists" not in str(exc).lower():
            raise
        time.sleep(_DELETE_AGAIN_AFTER)
        client.delete_folder(name)


def with_counts(client: Session, mailboxes: list[MailboxInfo]) -> list[MailboxInfo]:
    """The same list with message and unread counts (STATUS MESSAGES UNSEEN) for every selectable mailbox.

    A mailbox the server will not give a STATUS for (e.g. no read right) keeps null counts.
    """
    counted: list[MailboxInfo] = []
    for mailbox in mailboxes:
        if mailbox.selectable:
            try:
                status = client.folder_status(mailbox.name, [b"MESSAGES", b"UNSEEN"])
            except IMAPClientError:
                status = {}
            mailbox = mailbox.model_copy(update={"messages": status.get(b"MESSAGES"), "unread": status.get(b"UNSEEN")})
        counted.append(mailbox)
    return counted
