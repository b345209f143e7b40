"""The one registry of tools, and the one place where what a tool raises becomes its result.

`TOOLS` names every tool this server can offer: the feature it belongs to (its code is in
`server/tools/<feature>.py`, what stands behind it in `server/<feature>/`), its title and four
annotations, and whether it asks a person. The policy (`IMAP_MCP_TOOLS`, read-only), `get_server_info`,
the start-up check and the docs read it; a tool module registers its function with `offer`, which
takes everything but the description and the function from here.

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

if TYPE_CHECKING:  # the SDK is imported where tools are registered, not with the table (the CLI reads it)
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

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

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("list_mailboxes", "mailboxes", "List mailboxes", True, False, True, "never"),
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
    ToolSpec("search_messages", "reading", "Search messages", True, False, True, "never"),
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
    ),
    ToolSpec("set_message_flags", "changes", "Set message flags", False, False, True, "never"),
    ToolSpec("delete_messages", "changes", "Delete messages", False, True, True, "always", asking=_ALWAYS),
    ToolSpec("move_messages", "changes", "Move or copy messages", False, True, False, "always", asking=_ALWAYS),
    ToolSpec(
        "save_draft", "outgoing", "Save a draft", False, False, False, "never", refused_prefix="Nothing was saved: "
    ),
    ToolSpec(
        "send_message",
        "outgoing",
        "Send an email",
        False,
        True,
        False,
        "always",
        asking=_ALWAYS,
        refused_prefix=NOTHING_SENT,
        needs="SMTP_HOST",
    ),
    ToolSpec(
        "reply_to_message",
        "outgoing",
        "Reply to a message",
        False,
        True,
        False,
        "always",
        asking=_ALWAYS,
        refused_prefix=NOTHING_SENT,
        needs="SMTP_HOST",
    ),
    ToolSpec(
        "send_draft",
        "outgoing",
        "Send a draft",
        False,
        True,
        False,
        "always",
        asking=_ALWAYS,
        refused_prefix=NOTHING_SENT,
        needs="SMTP_HOST",
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
