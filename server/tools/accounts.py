"""`get_server_info`: what this server offers the caller, and why, before the model tries anything
(the account and its policy: `server/accounts/`).

Read-only and cheap: the capabilities of a pooled connection, one LIST, and the flags INBOX says
it keeps (a read-write SELECT, left at once without expunging anything). From them, what each use
of each tool does on this server (`imap.tools`: works, degrades, refused), judged by the
registry's `requires` exactly as `imap-mcp check` judges it. Never a secret: the account shows its
name, login, host, port and TLS mode, never a password or token. When the IMAP server cannot be
reached, the rest still answers and `imap.problem` says what went wrong.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from mcp.server.mcpserver import Context
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

from imap_mcp.protocol import APPROVAL_TTL, TOKEN_TTL, Guard, channel_for

from ..errors import MailboxError
from ..imap.kept_flags import said_kept
from ..imap.mailboxes import MailboxInfo, RoleFrom, list_mailboxes
from ..imap.pool import ImapPool
from ..imap.session import Session
from .needs import Capability, Readiness, ServerFacts, Verdict, settings_on
from .reading import DEFAULT_MAX_CHARS, DEFAULT_PAGE_SIZE, MAX_MAX_CHARS, MAX_PAGE_SIZE
from .registry import SERVER_INFO_TOOL, TOOLS, offer

if TYPE_CHECKING:  # types only: the account's folder reads the registry, so this folder does not import it
    from ..accounts.loading import Account
    from .policy_server import PolicyServer


def _capability_effects() -> dict[str, str]:
    """Each IMAP capability the registry's tools need, and which tool uses do what without it."""
    effects: dict[str, list[str]] = {}
    for spec in TOOLS:
        for need in spec.requires:
            if isinstance(need.requirement, Capability):
                use = f"{spec.name} ({need.use})" if need.use else spec.name
                for name in need.requirement.names:
                    effects.setdefault(name, []).append(
                        f"{use} {need.without} without {need.requirement.label}: {need.effect}"
                    )
    return {name: "; ".join(said) for name, said in effects.items()}


#: the IMAP capabilities imap-mcp uses, and what the tools do without each
RELEVANT_CAPABILITIES = _capability_effects()


class AccountInfo(BaseModel):
    name: str = Field(description="The account's name in this server's configuration.")
    login: str = Field(description="The IMAP login name.")
    host: str
    port: int
    tls: Literal["implicit", "starttls", "none"]
    sends_from: str | None = Field(description="The From address of sent mail; null when sending is not set up.")


class CapabilityInfo(BaseModel):
    name: str
    present: bool
    effect: str = Field(description="Which tools use it, and what they do without it.")


class ToolUse(BaseModel):
    tool: str
    use: str | None = Field(description="Which use of the tool (e.g. 'mode: move'); null: the tool as a whole.")
    verdict: Verdict = Field(
        description="works: as documented; degrades: works, slower or weaker (detail says how); refused: the tool "
        "refuses it on this server (detail says why and what to do instead); off: not offered (a setting); fails "
        "(only from `imap-mcp check --write-test`): it runs, and the server does not keep what it did."
    )
    detail: str


class ImapInfo(BaseModel):
    reachable: bool
    problem: str | None = Field(description="Why the IMAP server could not be asked; null when it answered.")
    capabilities: list[CapabilityInfo]
    mailboxes_by_role: dict[str, str] = Field(
        description="The mailbox found for each role (inbox, sent, drafts, trash, junk, archive, all, flagged)."
    )
    roles_from: dict[str, RoleFrom] = Field(
        default_factory=dict,
        description="Where each role's mailbox came from: setting (IMAP_MAILBOX_SENT, ..., the user's word: it wins), "
        "special-use or xlist (the server's attribute), name (a usual name, in one of many languages).",
    )
    role_settings: dict[str, str] = Field(
        default_factory=dict,
        description="The mailbox each IMAP_MAILBOX_* setting of this account names, by role; a role whose mailbox "
        "the account does not have has none (nothing else takes its place).",
    )
    tools: list[ToolUse] = Field(
        description="What each use of each tool does on this server, from its capabilities, mailboxes and the flags "
        "INBOX keeps (as `imap-mcp check` says); empty when the server could not be asked."
    )


class NotOffered(BaseModel):
    name: str
    reason: str


class ToolsInfo(BaseModel):
    offered: list[str] = Field(description="The tools this caller can call.")
    not_offered: list[NotOffered] = Field(description="The other tools of imap-mcp, each with why it is not offered.")
    read_only: bool = Field(description="IMAP_MCP_READ_ONLY for this account.")
    allow_list: list[str] | None = Field(description="IMAP_MCP_TOOLS for this account; null = every tool.")
    deny_list: list[str] = Field(description="IMAP_MCP_DISABLE_TOOLS for this account.")


class ApprovalsInfo(BaseModel):
    elicitation: bool = Field(description="ELICITATION: whether a person is asked through a dialog where possible.")
    this_request: Literal["dialog", "push", "token"] = Field(
        description="How a person would be asked on a request like this one."
    )
    dialog_possible: bool = Field(description="Whether this client can be shown a dialog.")
    token_fallback: str = Field(description="How approval works without a dialog.")
    dialog_seconds: int
    token_seconds: int


class LimitsInfo(BaseModel):
    search_page_default: int
    search_page_max: int
    max_chars_default: int
    max_chars_max: int
    inline_attachment_bytes: int = Field(
        description="Attachment bytes returned inline per get_attachments call or resources/read "
        "(IMAP_MAX_ATTACHMENT_BYTES)."
    )
    attachments: Literal["inline", "files"] = Field(description="files: get_attachments writes to IMAP_DOWNLOAD_DIR.")


class SendingInfo(BaseModel):
    """The operator's send policy for this account (IMAP_MCP_SEND_*); it is checked before anyone is asked."""

    allowed_recipients: list[str] | None = Field(
        description="IMAP_MCP_SEND_ALLOW: the addresses, domains and *.wildcards mail may go to; null = any address."
    )
    max_recipients: int = Field(description="IMAP_MCP_SEND_MAX_RECIPIENTS: the most recipients of one message.")
    confirm_new_recipients: bool = Field(
        description="IMAP_MCP_SEND_CONFIRM_NEW: a message to a recipient never written to before (no message in Sent "
        "was addressed to it, or that was not checked) needs a second confirmation: a second box in the dialog, a "
        "second confirm_token on the token path."
    )
    dialog_timezone: str = Field(
        description="The time zone the dialogs write times in (IMAP_MCP_DIALOG_TIMEZONE, else the server's local one)."
    )


class ServerInfo(BaseModel):
    name: str
    version: str
    protocol_versions: list[str] = Field(description="Every MCP protocol version this server answers.")
    this_request_version: str | None
    account: AccountInfo
    imap: ImapInfo
    tools: ToolsInfo
    approvals: ApprovalsInfo
    limits: LimitsInfo
    sending: SendingInfo


TOKEN_FALLBACK = (
    "A guarded tool called without a dialog answers with a question and a confirm_token; show the question to "
    "the person and call again with the same arguments and confirm_token only if they approve."
)


def _asked(client: Session) -> tuple[ServerFacts, list[MailboxInfo]]:
    """What the server shows of what the tools need (capabilities, roles, the flags INBOX keeps), and the mailboxes
    with their roles."""
    capabilities = frozenset(c.decode("ascii", "replace").upper() for c in client.capabilities())
    mailboxes = list_mailboxes(client)
    usable = frozenset(mailbox.role for mailbox in mailboxes if mailbox.selectable)
    read_only, kept = said_kept(client, "INBOX")
    return ServerFacts(capabilities, usable, frozenset() if read_only else kept), mailboxes


async def _imap_info(pool: ImapPool, account: Account) -> ImapInfo:
    named: dict[str, str] = {role: name for role, name in account.settings.imap.roles}
    try:
        facts, mailboxes = await pool.run(_asked)
    except MailboxError as exc:
        return ImapInfo(
            reachable=False, problem=str(exc), capabilities=[], mailboxes_by_role={}, role_settings=named, tools=[]
        )
    roles: dict[str, str] = {}
    roles_from: dict[str, RoleFrom] = {}
    for mailbox in mailboxes:
        if mailbox.role != "none" and mailbox.role not in roles:
            roles[mailbox.role] = mailbox.name
            if mailbox.role_from is not None:
                roles_from[mailbox.role] = mailbox.role_from
    capabilities = [
        CapabilityInfo(name=name, present=name in facts.capabilities, effect=effect)
        for name, effect in RELEVANT_CAPABILITIES.items()
    ]
    facts = replace(facts, settings=settings_on(account.settings))
    uses = [_tool_use(readiness) for spec in TOOLS for readiness in spec.readiness(facts)]
    return ImapInfo(
        reachable=True,
        problem=None,
        capabilities=capabilities,
        mailboxes_by_role=roles,
        roles_from=roles_from,
        role_settings=named,
        tools=uses,
    )


def _tool_use(readiness: Readiness) -> ToolUse:
    return ToolUse(tool=readiness.tool, use=readiness.use, verdict=readiness.verdict, detail=readiness.detail)


def _account_info(account: Account) -> AccountInfo:
    imap, smtp = account.settings.imap, account.settings.smtp
    return AccountInfo(
        name=account.name,
        login=imap.username,
        host=imap.host,
        port=imap.port,
        tls=imap.tls,
        sends_from=smtp.sender if smtp else None,
    )


async def _tools_info(mcp: PolicyServer, account: Account) -> ToolsInfo:
    offered = sorted(tool.name for tool in await mcp.list_tools())
    policy = account.policy
    return ToolsInfo(
        offered=offered,
        not_offered=[NotOffered(name=n, reason=r) for n, r in sorted(mcp.not_offered(offered).items())],
        read_only=policy.read_only,
        allow_list=sorted(policy.allowed) if policy.allowed is not None else None,
        deny_list=sorted(policy.disabled),
    )


def _approvals_info(ctx: Context, guard: Guard) -> ApprovalsInfo:
    channel = channel_for(ctx, guard.elicitation)
    return ApprovalsInfo(
        elicitation=guard.elicitation,
        this_request=channel.value,
        dialog_possible=channel.value != "token",
        token_fallback=TOKEN_FALLBACK,
        dialog_seconds=APPROVAL_TTL,
        token_seconds=TOKEN_TTL,
    )


def _limits(account: Account) -> LimitsInfo:
    return LimitsInfo(
        search_page_default=DEFAULT_PAGE_SIZE,
        search_page_max=MAX_PAGE_SIZE,
        max_chars_default=DEFAULT_MAX_CHARS,
        max_chars_max=MAX_MAX_CHARS,
        inline_attachment_bytes=account.settings.max_attachment_bytes,
        attachments="files" if account.settings.download_dir else "inline",
    )


def _sending(account: Account) -> SendingInfo:
    policy = account.settings.send_policy
    return SendingInfo(
        allowed_recipients=list(policy.allow) or None,
        max_recipients=policy.max_recipients,
        confirm_new_recipients=policy.confirm_new,
        dialog_timezone=account.settings.dialog_clock.label(),
    )


def register(mcp: PolicyServer, account: Account, pool: ImapPool, guard: Guard) -> None:
    @offer(
        mcp,
        SERVER_INFO_TOOL,
        description=(
            "Describe this server for the caller: version and protocol versions, the caller's account (no secrets), "
            "the IMAP server's relevant capabilities, the mailbox of each role and what each tool does on it (works, "
            "degrades or refused, and why), which tools are offered and why the others are not, how approvals are "
            "asked, the limits and the operator's send policy. Call it first to plan."
        ),
    )
    async def get_server_info(ctx: Context) -> ServerInfo:
        return ServerInfo(
            name=mcp.name,
            version=mcp.version,
            protocol_versions=[*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS],
            this_request_version=ctx.protocol_version,
            account=_account_info(account),
            imap=await _imap_info(pool, account),
            tools=await _tools_info(mcp, account),
            approvals=_approvals_info(ctx, guard),
            limits=_limits(account),
            sending=_sending(account),
        )
