"""The one registry of tools, and the one place where what a tool raises becomes its result.

`TOOLS` names every tool this server can offer: the feature it belongs to (its code is in
`server/tools/<feature>.py`, what stands behind it in `server/<feature>/`), its title and four
annotations, whether it asks a person, and what it needs of the mail server (`requires`: a
capability, a mailbox role, keywords kept, a setting; what happens without each). The policy
(`IMAP_MCP_TOOLS`, read-only), `get_server_info`, `imap-mcp check` (one line per tool: works,
degrades, refused), the docs' tools pages and the README's tool table read it; a tool module registers its
function with `offer`, which takes everything but the description and the function from here.

`offer` also wraps the function: an `ImapMcpError` becomes a tool error with its message (after
the tool's `refused_prefix`, "Nothing was sent: " for a send, except where the error says what
happened itself: a person's refusal); any other exception is a crash, logged with its traceback
and answered as one named internal error, never the SDK's bare "Error executing tool". Feature
code raises domain errors and never builds a tool error.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from imap_mcp.protocol.errors import ApprovalRefused, ImapMcpError

from ..imap.permanent_flags import SETTABLE_SYSTEM_FLAGS, keeps, keeps_new_keywords

if TYPE_CHECKING:  # the SDK is imported where tools are registered, not with the table (the CLI reads it)
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    from imap_mcp.protocol import Guard

    from ..config import Settings

Feature = Literal["mailboxes", "reading", "changes", "outgoing", "webhooks", "accounts"]
#: never; always (a person approves: a dialog, a pushed dialog, or the two-call token); it depends on the arguments
Asks = Literal["never", "always", "depends"]
ToolFunction = TypeVar("ToolFunction", bound=Callable[..., Any])
#: what a tool does on one server: as documented; slower or weaker (it says how); refused (it says why); runs but
#: the server does not keep what it did (only `imap-mcp check --write-test` finds it); not offered (a setting)
Verdict = Literal["works", "degrades", "refused", "fails", "off"]
#: the keyword list_new_messages keeps its last look in (`reading.new_messages.LISTED`)
LISTED_KEYWORD = "$ImapMcpListed"

logger = logging.getLogger("imap_mcp")


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


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the registry knows it (see the module docstring)."""

    name: str
    feature: Feature
    title: str
    read_only: bool
    destructive: bool
    idempotent: bool
    asks: Asks
    #: the dialog's rule in words, for docs and get_server_info
    asking: str = "never"
    open_world: bool = True
    #: what every refusal of this tool says first (a person's refusal excepted: it says what happened itself)
    refused_prefix: str = ""
    #: the setting under which this tool writes files, so it is neither read-only nor idempotent then
    writes_when: str | None = None
    #: the setting without which this tool is not offered
    needs: str | None = None
    #: the uses of this tool that need different things (e.g. "mode: move", "mode: copy"); () = one use
    uses: tuple[str, ...] = ()
    #: what it needs of the mail server (and of settings) to work as documented, and what happens without each
    requires: tuple[Need, ...] = ()

    def readiness(self, facts: ServerFacts) -> list[Readiness]:
        """Each use of this tool on a server with `facts`: works, degrades, refused, or off (not offered)."""
        if self.needs is not None and self.needs not in facts.settings:
            return [
                Readiness(self.name, use, "off", f"not offered: {self.needs} is not set")
                for use in self.uses or (None,)
            ]
        return [self._use_readiness(use, facts) for use in self.uses or (None,)]

    def needs_of(self, use: str | None) -> list[Need]:
        """What `use` needs: the needs of every use, and its own."""
        return [need for need in self.requires if need.use is None or need.use == use]

    def _use_readiness(self, use: str | None, facts: ServerFacts) -> Readiness:
        needs = self.needs_of(use)
        missing = [need for need in needs if not need.requirement.met(facts)]
        refused = [need for need in missing if need.without == "refused"]
        if not missing:
            used = list(dict.fromkeys(need.requirement.used(facts) for need in needs))
            return Readiness(self.name, use, "works", f"with {', '.join(used)}" if used else "")
        said = "; ".join(f"without {need.requirement.label}: {need.effect}" for need in refused or missing)
        return Readiness(self.name, use, "refused" if refused else "degrades", said)

    def annotations(self, writes: bool = False) -> ToolAnnotations:
        """All four hints, stated; `writes`: the `writes_when` setting is set."""
        from mcp.types import ToolAnnotations

        return ToolAnnotations(
            title=self.title,
            read_only_hint=self.read_only and not writes,
            destructive_hint=self.destructive,
            idempotent_hint=self.idempotent and not writes,
            open_world_hint=self.open_world,
        )


NOTHING_SENT = "Nothing was sent: "
_ALWAYS = "always: a dialog where the client can show one, else the two-call token"


def _moving(use: str, instead: str) -> tuple[Need, ...]:
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


def _saving_to_sent() -> tuple[Need, ...]:
    return (
        Need(
            RoleMailbox("sent"),
            "refused",
            "nothing is sent: create a Sent mailbox, or send with save_to_sent: false",
            "save_to_sent: true",
        ),
    )


_WEBHOOKS_ON = Need(
    SettingOn("IMAP_MCP_WEBHOOKS", "IMAP_MCP_WEBHOOKS on (the default)"),
    "refused",
    "the webhook tools only read",
)
_SENT_USES = ("save_to_sent: true", "save_to_sent: false")


def _sending(name: str, title: str, requires: tuple[Need, ...]) -> ToolSpec:
    """A tool that sends mail: asked every time, offered with SMTP_HOST, its uses and needs those of a send."""
    return ToolSpec(
        name,
        "outgoing",
        title,
        False,
        True,
        False,
        "always",
        asking=_ALWAYS,
        refused_prefix=NOTHING_SENT,
        needs="SMTP_HOST",
        uses=_SENT_USES,
        requires=requires,
    )


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "list_mailboxes",
        "mailboxes",
        "List mailboxes",
        True,
        False,
        True,
        "never",
        requires=(
            Need(
                Capability(("SPECIAL-USE", "XLIST")),
                "degrades",
                "the roles (Sent, Drafts, Trash, Junk, Archive) are found by the mailboxes' names",
            ),
        ),
    ),
    ToolSpec(
        "manage_mailbox",
        "mailboxes",
        "Create, rename or delete a mailbox",
        False,
        True,
        False,
        "depends",
        asking="delete: always; rename: the two-call token (it can be undone); create: never",
    ),
    ToolSpec(
        "search_messages",
        "reading",
        "Search messages",
        True,
        False,
        True,
        "never",
        requires=(
            Need(
                Capability(("SORT",)),
                "degrades",
                "imap-mcp orders the matches itself, fetching the date of every match (slower in a large mailbox)",
            ),
            Need(Capability(("ESEARCH",)), "degrades", "the matching UIDs come as one long list instead of ranges"),
            Need(Capability(("CONDSTORE",)), "degrades", "no search order is kept: every page searches again"),
            Need(
                Capability(("QRESYNC",)),
                "degrades",
                "a kept search order learns which matches left by asking about each of them",
            ),
        ),
    ),
    ToolSpec("get_message", "reading", "Read a message", True, False, True, "never"),
    ToolSpec("get_thread", "reading", "Read a conversation", True, False, True, "never"),
    ToolSpec(
        "get_attachments", "reading", "Get attachments", True, False, True, "never", writes_when="IMAP_DOWNLOAD_DIR"
    ),
    ToolSpec(
        "list_new_messages",
        "reading",
        "List new messages",
        False,
        False,
        False,
        "never",
        asking="never: the keyword it sets is not the read state",
        requires=(
            Need(
                KeptKeyword(LISTED_KEYWORD),
                "refused",
                "its last look is that keyword on the messages; search_messages with since: finds new mail",
            ),
            Need(Capability(("CONDSTORE",)), "degrades", "two calls at the same moment may both list a message"),
        ),
    ),
    ToolSpec(
        "set_message_flags",
        "changes",
        "Set message flags",
        False,
        False,
        True,
        "never",
        uses=("flags", "keywords"),
        requires=(
            *(
                Need(
                    KeptFlag(flag), "degrades", f"{flag} is refused (nothing is changed); the other flags work", "flags"
                )
                for flag in SETTABLE_SYSTEM_FLAGS
            ),
            Need(
                KeptKeyword(),
                "refused",
                "the server would take a keyword and keep nothing; nothing is changed",
                "keywords",
            ),
        ),
    ),
    ToolSpec(
        "delete_messages",
        "changes",
        "Delete messages",
        False,
        True,
        True,
        "always",
        asking=_ALWAYS,
        uses=("permanent: false", "permanent: true"),
        requires=(
            Need(
                RoleMailbox("trash"),
                "refused",
                "create a Trash mailbox, or delete with permanent: true",
                "permanent: false",
            ),
            *_moving("permanent: false", "copy them with move_messages mode copy"),
            Need(
                Capability(("UIDPLUS",)),
                "refused",
                "a plain EXPUNGE would also remove what other clients marked \\Deleted; delete to Trash instead",
                "permanent: true",
            ),
        ),
    ),
    ToolSpec(
        "move_messages",
        "changes",
        "Move or copy messages",
        False,
        True,
        False,
        "always",
        asking=_ALWAYS,
        uses=("mode: move", "mode: copy"),
        requires=(
            *_moving("mode: move", "mode copy still works"),
            Need(
                Capability(("UIDPLUS",)),
                "degrades",
                "the new ids are not returned (no COPYUID): search the destination for them",
            ),
        ),
    ),
    ToolSpec(
        "save_draft",
        "outgoing",
        "Save a draft",
        False,
        False,
        False,
        "never",
        refused_prefix="Nothing was saved: ",
        requires=(Need(RoleMailbox("drafts"), "refused", "create a Drafts mailbox"),),
    ),
    ToolSpec(
        "update_draft",
        "outgoing",
        "Replace a draft's content",
        False,
        True,
        False,
        "depends",
        asking="for drafts this server did not save: a dialog where the client can show one, else the two-call token",
        refused_prefix="Nothing was changed: ",
        requires=(
            Need(RoleMailbox("drafts"), "refused", "there is no draft to replace: create a Drafts mailbox"),
            Need(
                Capability(("UIDPLUS",)),
                "degrades",
                "the new draft is saved but the old one stays in Drafts (nothing can expunge exactly it); delete it "
                "there",
            ),
        ),
    ),
    _sending("send_message", "Send an email", _saving_to_sent()),
    _sending("reply_to_message", "Reply to a message", _saving_to_sent()),
    _sending(
        "send_draft",
        "Send a draft",
        (
            *_saving_to_sent(),
            Need(RoleMailbox("drafts"), "refused", "there is no draft to send: create a Drafts mailbox"),
            Need(
                Capability(("UIDPLUS",)),
                "degrades",
                "the draft is sent but stays in Drafts (nothing can expunge exactly it); delete it there",
            ),
        ),
    ),
    _sending(
        "forward_message",
        "Forward a message",
        (
            *_saving_to_sent(),
            Need(
                KeptKeyword("$Forwarded"),
                "degrades",
                "the message is forwarded, but the original is not marked $Forwarded (the result says so)",
            ),
        ),
    ),
    ToolSpec("get_server_info", "accounts", "Describe this server", True, False, True, "never"),
    ToolSpec("get_webhook_status", "webhooks", "Get webhook status", True, False, True, "never", open_world=False),
    ToolSpec(
        "set_webhook_enabled",
        "webhooks",
        "Turn the new-mail webhook on or off",
        False,
        True,
        True,
        "never",
        asking="never: it acts on notifications, not on mail",
        requires=(
            _WEBHOOKS_ON,
            Need(
                Capability(("IDLE",)),
                "degrades",
                "the watcher (imap-mcp watch) looks for new mail every 5 seconds instead of being told at once",
            ),
        ),
    ),
    ToolSpec(
        "set_webhook_outbox_limits",
        "webhooks",
        "Set webhook outbox limits",
        False,
        True,
        True,
        "never",
        asking="never: it acts on notifications, not on mail",
        open_world=False,
        requires=(_WEBHOOKS_ON,),
    ),
)
BY_NAME = {spec.name: spec for spec in TOOLS}
TOOL_NAMES = tuple(spec.name for spec in TOOLS)
#: the one tool every policy offers
SERVER_INFO_TOOL = "get_server_info"


def internal_error(spec: ToolSpec, exc: BaseException) -> str:
    """What a caller reads of an exception no layer expected (its traceback is in the server's log)."""
    return (
        f"{spec.name} failed inside imap-mcp ({type(exc).__name__}): a bug, not something to retry differently. "
        "The server's log has the details (look for this tool's name)."
    )


def refusal(spec: ToolSpec, exc: ImapMcpError) -> str:
    """A domain error's message as the tool's result says it: after the tool's prefix, unless it is a person's
    refusal (it says what happened itself)."""
    if isinstance(exc, ApprovalRefused):
        return str(exc)
    return spec.refused_prefix + str(exc)


def translated(spec: ToolSpec, function: ToolFunction) -> ToolFunction:
    """`function` with every exception it raises turned into the tool's result (see the module docstring)."""
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.shared.exceptions import MCPError

    @functools.wraps(function)
    async def tool(*args: Any, **kwargs: Any) -> Any:
        try:
            result = function(*args, **kwargs)
            return await result if inspect.isawaitable(result) else result
        except ImapMcpError as exc:
            raise ToolError(refusal(spec, exc)) from None
        except MCPError:
            raise  # a protocol error the SDK answers as JSON-RPC (e.g. a missing capability)
        except Exception as exc:
            logger.exception("tool %s raised an unexpected %s", spec.name, type(exc).__name__)
            raise ToolError(internal_error(spec, exc)) from None

    return tool  # type: ignore[return-value]


def offer(
    mcp: MCPServer, name: str, *, description: str, guard: Guard | None = None, writes: bool = False
) -> Callable[[ToolFunction], ToolFunction]:
    """Register the decorated function as the tool `name` of the registry; through `guard` when it asks a person
    (so the guard knows it by name). `writes`: its `writes_when` setting is set."""
    spec = BY_NAME[name]
    if (spec.asks != "never") != (guard is not None):
        raise ValueError(
            f"{name} asks {spec.asks!r}: register it {'with' if spec.asks != 'never' else 'without'} a guard"
        )
    options: dict[str, Any] = {"title": spec.title, "description": description, "annotations": spec.annotations(writes)}

    def register(function: ToolFunction) -> ToolFunction:
        wrapped = translated(spec, function)
        if guard is not None:
            guard.tool(mcp, name, **options)(wrapped)
        else:
            mcp.tool(name=name, **options)(wrapped)
        return function

    return register
