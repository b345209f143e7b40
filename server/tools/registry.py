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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from imap_mcp.protocol.errors import ApprovalRefused, ImapMcpError

from ..imap.permanent_flags import SETTABLE_SYSTEM_FLAGS
from .needs import (
    LISTED_KEYWORD,
    WEBHOOKS_ON,
    Capability,
    KeptFlag,
    KeptKeyword,
    Need,
    Readiness,
    RoleMailbox,
    ServerFacts,
    moving_needs,
    saving_to_sent_needs,
)

if TYPE_CHECKING:  # the SDK is imported where tools are registered, not with the table (the CLI reads it)
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations
    from pydantic import ValidationError

    from imap_mcp.protocol import Guard


Feature = Literal["mailboxes", "reading", "changes", "outgoing", "webhooks", "accounts"]
#: never; always (a person approves: a dialog, a pushed dialog, or the two-call token); it depends on the arguments
Asks = Literal["never", "always", "depends"]
ToolFunction = TypeVar("ToolFunction", bound=Callable[..., Any])

logger = logging.getLogger("imap_mcp")


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
    #: how it names messages: `id` (one; or the deprecated `mailbox` + `uid`), `ids` (several, of one mailbox; or
    #: `mailbox` + `uids`); None: it takes no message (`offer` holds every tool to what this says)
    names_messages: Literal["id", "ids"] | None = None

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


_SENT_USES = ("save_to_sent: true", "save_to_sent: false")


def _sending(
    name: str, title: str, requires: tuple[Need, ...], names_messages: Literal["id"] | None = None
) -> ToolSpec:
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
        names_messages=names_messages,
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
    ToolSpec("get_message", "reading", "Read a message", True, False, True, "never", names_messages="id"),
    ToolSpec("get_thread", "reading", "Read a conversation", True, False, True, "never", names_messages="id"),
    ToolSpec(
        "get_attachments",
        "reading",
        "Get attachments",
        True,
        False,
        True,
        "never",
        writes_when="IMAP_DOWNLOAD_DIR",
        names_messages="id",
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
        names_messages="ids",
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
        names_messages="ids",
        requires=(
            Need(
                RoleMailbox("trash"),
                "refused",
                "create a Trash mailbox, or delete with permanent: true",
                "permanent: false",
            ),
            *moving_needs("permanent: false", "copy them with move_messages mode copy"),
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
        names_messages="ids",
        requires=(
            *moving_needs("mode: move", "mode copy still works"),
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
        names_messages="id",
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
    _sending("send_message", "Send an email", saving_to_sent_needs()),
    _sending("reply_to_message", "Reply to a message", saving_to_sent_needs(), "id"),
    _sending(
        "send_draft",
        "Send a draft",
        (
            *saving_to_sent_needs(),
            Need(RoleMailbox("drafts"), "refused", "there is no draft to send: create a Drafts mailbox"),
            Need(
                Capability(("UIDPLUS",)),
                "degrades",
                "the draft is sent but stays in Drafts (nothing can expunge exactly it); delete it there",
            ),
        ),
        "id",
    ),
    _sending(
        "forward_message",
        "Forward a message",
        (
            *saving_to_sent_needs(),
            Need(
                KeptKeyword("$Forwarded"),
                "degrades",
                "the message is forwarded, but the original is not marked $Forwarded (the result says so)",
            ),
        ),
        "id",
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
            WEBHOOKS_ON,
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
        requires=(WEBHOOKS_ON,),
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


def arguments_refused(
    tool: str, refused: ValidationError, schema: Mapping[str, Any], arguments: Mapping[str, Any]
) -> Exception:
    """The tool error for arguments the tool's model refused (`refused`, pydantic's ValidationError), in imap-mcp's
    words (`argument_errors.in_our_words`), never pydantic's report; every tool raises it (`tool_shapes`)."""
    from mcp.server.mcpserver.exceptions import ToolError

    from .argument_errors import in_our_words

    return ToolError(f"Error executing tool {tool}: {in_our_words(refused, schema, arguments)}")


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


#: the arguments a tool takes to name messages, by `ToolSpec.names_messages`: the id form and the deprecated form
MESSAGE_ARGUMENTS: dict[str, frozenset[str]] = {
    "id": frozenset({"id", "mailbox", "uid"}),
    "ids": frozenset({"ids", "mailbox", "uids"}),
}


def check_message_arguments(spec: ToolSpec, function: Callable[..., Any]) -> None:
    """Refuse (ValueError, at registration) a function that names messages otherwise than its `spec` says: every
    tool that takes `id` also takes `mailbox` + `uid`, every one that takes `ids` `mailbox` + `uids`."""
    parameters = set(inspect.signature(function).parameters)
    wanted = MESSAGE_ARGUMENTS.get(spec.names_messages or "", frozenset())
    named = parameters & {"id", "ids"}
    if not wanted <= parameters or named != wanted & {"id", "ids"}:
        raise ValueError(
            f"{spec.name} takes {sorted(parameters & (MESSAGE_ARGUMENTS['id'] | MESSAGE_ARGUMENTS['ids']))}, but "
            f"the registry says it names messages by {spec.names_messages}: it must take {sorted(wanted)}"
        )


def offer(
    mcp: MCPServer, name: str, *, description: str, guard: Guard | None = None, writes: bool = False
) -> Callable[[ToolFunction], ToolFunction]:
    """Register the decorated function as the tool `name` of the registry; through `guard` when it asks a person
    (so the guard knows it by name). `writes`: its `writes_when` setting is set. A function that names messages
    otherwise than the registry says (`names_messages`) is refused."""
    spec = BY_NAME[name]
    if (spec.asks != "never") != (guard is not None):
        raise ValueError(
            f"{name} asks {spec.asks!r}: register it {'with' if spec.asks != 'never' else 'without'} a guard"
        )
    options: dict[str, Any] = {"title": spec.title, "description": description, "annotations": spec.annotations(writes)}

    def register(function: ToolFunction) -> ToolFunction:
        check_message_arguments(spec, function)
        wrapped = translated(spec, function)
        if guard is not None:
            guard.tool(mcp, name, **options)(wrapped)
        else:
            mcp.tool(name=name, **options)(wrapped)
        return function

    return register
