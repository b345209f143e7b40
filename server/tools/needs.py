"""What a tool needs of the server and the settings to work, and how ready it is: the facts `imap-mcp check` and
`get_server_info` read (capabilities, role mailboxes, kept flags and keywords, settings), each tool's needs
(`Need`) and their verdict (`Readiness`). The registry names each tool's needs from these."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..imap.permanent_flags import keeps, keeps_new_keywords

if TYPE_CHECKING:
    from ..config import Settings

#: what a tool does on one server: as documented; slower or weaker (it says how); refused (it says why); runs but
#: the server does not keep what it did (only `imap-mcp check --write-test` finds it); not offered (a setting)
Verdict = Literal["works", "degrades", "refused", "fails", "off"]


#: the keyword list_new_messages keeps its last look in (`reading.new_messages.LISTED`)
LISTED_KEYWORD = "$ImapMcpListed"


@dataclass(frozen=True)
class ServerFacts:
    """What a server showed of what the tools need: its capabilities (upper case), the roles of its mailboxes,
    the flags INBOX keeps, and which of the settings the tools need are on."""

    capabilities: frozenset[str]
    roles: frozenset[str]
    #: PERMANENTFLAGS of INBOX selected read-write (empty when it is read-only); None when the SELECT did not say,
    #: which RFC 3501 reads as every flag
    kept_flags: frozenset[bytes] | None
    settings: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Capability:
    """An IMAP capability (any one of several)."""

    names: tuple[str, ...]

    @property
    def label(self) -> str:
        return " or ".join(self.names)

    def met(self, facts: ServerFacts) -> bool:
        return any(name in facts.capabilities for name in self.names)

    def used(self, facts: ServerFacts) -> str:
        """What is used where it is met: the first of the names the server offers."""
        return next((name for name in self.names if name in facts.capabilities), self.label)


@dataclass(frozen=True)
class RoleMailbox:
    """A mailbox with this role: marked by SPECIAL-USE or XLIST, or named like one (`imap.mailboxes`)."""

    role: Literal["sent", "drafts", "trash"]

    @property
    def label(self) -> str:
        return f"a {self.role.title()} mailbox"

    def met(self, facts: ServerFacts) -> bool:
        return self.role in facts.roles

    def used(self, facts: ServerFacts) -> str:
        return self.label


@dataclass(frozen=True)
class KeptKeyword:
    """A mailbox that keeps a keyword: `\\*` in PERMANENTFLAGS (any new keyword), or this one by name."""

    keyword: str | None = None

    @property
    def label(self) -> str:
        also = f" or {self.keyword}" if self.keyword else ""
        return f"keywords kept (PERMANENTFLAGS with \\*{also})"

    def met(self, facts: ServerFacts) -> bool:
        if self.keyword is None:
            return keeps_new_keywords(facts.kept_flags)
        return keeps(facts.kept_flags, self.keyword)

    def used(self, facts: ServerFacts) -> str:
        return self.label


@dataclass(frozen=True)
class KeptFlag:
    """A mailbox that keeps a system flag: listed in PERMANENTFLAGS (`\\*` allows keywords only, RFC 9051)."""

    flag: str

    @property
    def label(self) -> str:
        return f"{self.flag} kept (in PERMANENTFLAGS)"

    def met(self, facts: ServerFacts) -> bool:
        return keeps(facts.kept_flags, self.flag)

    def used(self, facts: ServerFacts) -> str:
        return "the system flags kept"


@dataclass(frozen=True)
class SettingOn:
    """A setting of this server that is set (or not switched off); `label` says which value counts."""

    name: str
    label: str

    def met(self, facts: ServerFacts) -> bool:
        return self.name in facts.settings

    def used(self, facts: ServerFacts) -> str:
        return self.label


Requirement = Capability | RoleMailbox | KeptKeyword | KeptFlag | SettingOn


@dataclass(frozen=True)
class Need:
    """What one use of a tool (`use`; None: every use) needs, and what happens without it: it degrades or is
    refused (`without`), and how, or what to do instead (`effect`, said after "without <requirement>: ")."""

    requirement: Requirement
    without: Literal["degrades", "refused"]
    effect: str
    use: str | None = None


#: the settings the needs name (a tool's `needs`, a `SettingOn`), and whether each is set (or on)
SETTINGS: dict[str, Callable[[Settings], bool]] = {
    "SMTP_HOST": lambda settings: settings.smtp is not None,
    "IMAP_MCP_WEBHOOKS": lambda settings: settings.webhooks.enabled,
}


def settings_on(settings: Settings) -> frozenset[str]:
    """Those of `SETTINGS` that are set (or on) in `settings`."""
    return frozenset(name for name, is_on in SETTINGS.items() if is_on(settings))


@dataclass(frozen=True)
class Readiness:
    """One use of a tool on one server: its verdict, and why (what is missing and what happens)."""

    tool: str
    use: str | None
    verdict: Verdict
    detail: str

    @property
    def name(self) -> str:
        return f"{self.tool} ({self.use})" if self.use else self.tool


def moving_needs(use: str, instead: str) -> tuple[Need, ...]:
    """What taking messages out of a mailbox needs, which a move and a trash-delete (a move to Trash) share."""
    return (
        Need(
            Capability(("MOVE", "UIDPLUS")),
            "refused",
            f"nothing could take exactly these messages out of their mailbox ({instead})",
            use,
        ),
        Need(
            Capability(("MOVE",)),
            "degrades",
            "the messages are copied, then exactly these are expunged (UID EXPUNGE): two steps instead of one",
            use,
        ),
    )


def saving_to_sent_needs() -> tuple[Need, ...]:
    return (
        Need(
            RoleMailbox("sent"),
            "refused",
            "nothing is sent: create a Sent mailbox, or send with save_to_sent: false",
            "save_to_sent: true",
        ),
    )


WEBHOOKS_ON = Need(
    SettingOn("IMAP_MCP_WEBHOOKS", "IMAP_MCP_WEBHOOKS on (the default)"),
    "refused",
    "the webhook tools only read",
)
