"""`list_mailboxes` and `manage_mailbox`: the mailboxes themselves (`server/mailboxes/`).

Creating a mailbox asks no one; renaming one takes the two-call token (it can be undone); deleting
one, with every message in it, is approved by a person first.

A change whose answer was lost or spoiled after its command went out (a BYE, a NO after the fact, a
dropped connection) is read back (`mailboxes.folders.now_true`, a LIST on a connection of its own): done
when the server shows it done (the result says the answer was lost), the failure when nothing happened,
and neither claimed when the server shows neither.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Annotated, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import BaseModel, Field

from imap_mcp.protocol import Guard

from ..errors import MailboxError
from ..imap.helper_lookups import look_up_apart
from ..imap.mailboxes import MailboxInfo, list_mailboxes, with_counts
from ..imap.pool import ImapPool
from ..imap.session import Session
from ..mailboxes.folders import (
    FolderOperation,
    MailboxOperation,
    create_folder,
    execute_folder_change,
    now_true,
    plan_folder_change,
)
from ..mailboxes.questions import delete_mailbox_request, rename_mailbox_request
from .registry import offer
from .results import log_change, text_result

Action = Literal["create", "rename", "delete"]


class MailboxList(BaseModel):
    mailboxes: list[MailboxInfo] = Field(description="INBOX first, then the others by name.")


class MailboxChange(BaseModel):
    status: Literal["done", "confirmation_required"] = Field(
        description="done: the change ran; confirmation_required: nothing ran yet, repeat with confirm_token."
    )
    action: Action
    mailbox: str
    new_name: str | None = Field(description="The new name (rename only).")
    approved_by: Literal["dialog", "push", "token", "not needed"] | None = Field(
        description="How the change was approved; 'not needed' for create."
    )
    confirm_token: str | None = Field(default=None, description="Pass this back to run the change (token path).")
    read_back: str | None = Field(
        default=None,
        description="Set when the server's answer to the change was lost or spoiled: the change was read back "
        "from the mailbox list, which shows it done.",
    )


def _counted(client: Session) -> list[MailboxInfo]:
    return with_counts(client, list_mailboxes(client))


Change = Callable[[Session, Callable[[], None]], None]


def created(mailbox: str, client: Session, sending: Callable[[], None]) -> None:
    create_folder(client, mailbox, sending)


async def run_and_read_back(
    pool: ImapPool,
    operation: MailboxOperation,
    mailbox: str,
    new_name: str | None,
    change: Change,
) -> str | None:
    """Run `change` once; None when the server answered it OK. When it failed after its command went out, what the
    mailbox list shows now decides: the change is there (a note saying the answer was lost), nothing happened
    (the failure stands), or neither can be told (an error saying so)."""
    sent = threading.Event()
    try:
        await pool.run(lambda client: change(client, sent.set), retry=False)
        return None
    except MailboxError as exc:
        if not sent.is_set():
            raise
        failure = exc
    looked = await look_up_apart(
        lambda: pool.run(lambda client: now_true(client, operation, mailbox, new_name)), "What the mailbox list shows"
    )
    if looked.value is True:
        return "The server's answer was lost or spoiled; the mailbox list, read again, shows the change was made."
    if looked.value is False:
        raise failure
    shows = looked.note or "the mailbox list shows both names or neither"
    raise MailboxError(
        f"{failure} Whether the change was made cannot be told ({shows}); call list_mailboxes to see what is there "
        "before trying again."
    ) from None


def register(mcp: MCPServer, pool: ImapPool, guard: Guard) -> None:
    @offer(
        mcp,
        "list_mailboxes",
        description=(
            "List every mailbox (folder) of the account with its name, hierarchy delimiter, role "
            "(inbox, sent, drafts, trash, junk, archive, all, flagged, or none) and whether it can "
            "hold messages. With counts: true, also how many messages each holds and how many are unread."
        ),
    )
    async def list_mailboxes_tool(
        counts: Annotated[bool, Field(description="Also return message and unread counts (one STATUS each).")] = False,
    ) -> MailboxList:
        return MailboxList(mailboxes=await pool.run(_counted if counts else list_mailboxes))

    @offer(
        mcp,
        "manage_mailbox",
        guard=guard,
        description=(
            "Create a mailbox (runs at once), rename one (the first call returns a confirm_token; repeat the call "
            "with it), or delete one with every message in it (a person is always asked to approve first, in a "
            "dialog where the client can show one; otherwise through the confirm_token)."
        ),
    )
    async def manage_mailbox(
        action: Annotated[Action, Field(description="create, rename or delete.")],
        mailbox: Annotated[str, Field(min_length=1, max_length=1000, description="The mailbox's full name.")],
        ctx: Context,
        new_name: Annotated[str | None, Field(max_length=1000, description="For rename: the full new name.")] = None,
        confirm_token: Annotated[
            str | None, Field(description="Only when a previous identical call returned one: run the change.")
        ] = None,
    ) -> Annotated[CallToolResult, MailboxChange] | InputRequiredResult:
        account = pool.settings.account
        if action == "create":
            lost = await run_and_read_back(pool, "create_mailbox", mailbox, None, functools.partial(created, mailbox))
            log_change("create_mailbox", mailbox)
            done = MailboxChange(
                status="done", action=action, mailbox=mailbox, new_name=None, approved_by="not needed", read_back=lost
            )
            return text_result(f"Created the mailbox {mailbox!r}." + (f" {lost}" if lost else ""), done)
        operation: FolderOperation = "delete_mailbox" if action == "delete" else "rename_mailbox"
        target = await pool.run(lambda c: plan_folder_change(c, account, operation, mailbox, new_name))
        build = delete_mailbox_request if action == "delete" else rename_mailbox_request
        request = build("manage_mailbox", target)
        decision = await guard.approve(ctx, request, confirm_token)
        shown_new_name = new_name if action == "rename" else None
        channel = decision.channel
        if channel is None:
            return decision.reply(
                lambda token: MailboxChange(
                    status="confirmation_required",
                    action=action,
                    mailbox=mailbox,
                    new_name=shown_new_name,
                    approved_by=None,
                    confirm_token=token,
                )
            )
        lost = await run_and_read_back(
            pool, operation, mailbox, new_name, lambda c, sending: execute_folder_change(c, target, sending)
        )
        log_change(operation, mailbox, approved_by=channel.value, destination=shown_new_name)
        done = MailboxChange(
            status="done",
            action=action,
            mailbox=mailbox,
            new_name=shown_new_name,
            approved_by=channel.value,
            read_back=lost,
        )
        return text_result(f"Done ({channel.value}): {request.summary}." + (f" {lost}" if lost else ""), done)
