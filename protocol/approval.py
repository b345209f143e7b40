"""Asking a person before a change a mailbox cannot undo: one code path for every guarded tool.

`Guard.approve` returns one `Decision`: approved (`decision.channel` says how; run the change), or
not yet, and then `decision.reply(...)` is what the tool returns (the `InputRequiredResult` a
2026-07-28 client shows as a dialog and retries, or the two-call fallback's token). It raises
`ApprovalRefused` when the person said no or a token does not fit. A guarded tool is registered with
`Guard.tool`, which names it once for both the server and the guard. See `eras` for which way is
taken. The binding is always the same: a `Claim` of the target's fingerprint, computed by the
caller from the call's own arguments and the mailbox's *current* state, sealed by `sealing`.

Why a hand-rolled `InputRequiredResult` rather than the SDK's `Resolve(...)`: a resolver cannot
carry our own sealed claim, cannot fall back to a token when the client shows no dialog (it
answers -32021 instead), and its recorded answers are keyed by code names. The hand-rolled
result only works on 2026-07-28 (it is -32603 on 2025-11-25), so the legacy era gets
`ctx.elicit()` pushed over its back channel instead.

Why two seals on the dialog path: the SDK's boundary seals every `requestState` (AES-GCM, bound
to the tool, its arguments and the principal) and is configured with our key ring, so states
open on every replica; inside it, our own seal binds the live target and the question, which
the SDK cannot know. A state that fails either check is *no answer* and gets a fresh question
(`reask` handles the boundary's refusals).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import AcceptedElicitation, Context, MCPServer
from mcp.server.request_state import RequestStateSecurity, authenticated_principal
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)
from pydantic import BaseModel

from imap_mcp.sealing import Claim, KeyRing, Opened, Sealer, SealError, Target, fingerprint, question_digest

from . import texts
from .eras import Channel, channel_for
from .errors import ApprovalRefused
from .reask import ReaskOnUnopenedState, install_before_boundary

logger = logging.getLogger("imap_mcp.protocol")

#: who is asking, from the request; None where there is no principal (stdio, no auth)
PrincipalHook = Callable[[ServerRequestContext[Any, Any]], str | None]

APPROVAL_TTL = 600  #: seconds a dialog may stay open (and its state stay valid)
TOKEN_TTL = 300  #: seconds a confirm_token stays valid


@dataclass(frozen=True)
class ApprovalRequest:
    """One change to approve. `question` is the dialog text; `summary` one line for results."""

    tool: str
    target: Target
    question: str
    summary: str
    dialog: bool = True  #: False: the two-call token is enough (a reversible change)
    #: what the call's arguments resolved to (opaque here), sealed into the question's state or token so the
    #: answer can act on exactly that (`Guard.pinned`); the target's fingerprint still binds what runs
    pinned: str = ""

    @property
    def claim(self) -> Claim:
        return Claim(fingerprint(self.target), question_digest(self.question), self.pinned)


@dataclass(frozen=True)
class TokenIssued:
    """The first of two calls: nothing ran; `text` explains what the token proves."""

    token: str
    text: str


@dataclass(frozen=True)
class Decision:
    """What `Guard.approve` decided: `channel` is set when the change is approved (and says how);
    otherwise nothing ran, and `reply` is what the tool returns."""

    channel: Channel | None = None
    question: InputRequiredResult | None = None  #: a dialog round: the client shows it and retries
    token: TokenIssued | None = None  #: the first of two calls
    #: an approved decision's name, from the verified seal: the same on every replay of it, None for a pushed
    #: dialog (no seal). Derive idempotency keys from it, never from the text of the state or token.
    identity: str | None = None

    def evidence(self) -> bytes:
        """What identifies this approval on every replay of its call (its verified content, never the text of the
        state or token, which could be spelled another way); fresh bytes each time for a pushed dialog, which
        has no seal and is not replayed."""
        return self.identity.encode() if self.identity else secrets.token_bytes(32)

    def reply(self, pending: Callable[[str], BaseModel]) -> CallToolResult | InputRequiredResult:
        """Not approved yet: the dialog round as it is, or the token explained, with `pending(token)` as the
        structured result (the tool's own result model, saying nothing ran)."""
        if self.question is not None:
            return self.question
        if self.token is None:
            raise RuntimeError("reply() is for a decision that was not approved; run the change instead")
        return CallToolResult(
            content=[TextContent(type="text", text=self.token.text)],
            structured_content=pending(self.token.token).model_dump(mode="json", by_alias=True),
        )


ToolFunction = TypeVar("ToolFunction", bound=Callable[..., Any])


class Guard:
    """The approval policy of one server: key ring, ELICITATION, principal, and the guarded tools."""

    def __init__(
        self,
        ring: KeyRing,
        *,
        elicitation: bool,
        principal: PrincipalHook = authenticated_principal,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.ring = ring
        self.elicitation = elicitation
        self.principal = principal
        self._guarded: set[str] = set()
        self._states = Sealer(ring, purpose="approval-state", ttl=APPROVAL_TTL, clock=clock)
        self._tokens = Sealer(ring, purpose="confirm-token", ttl=TOKEN_TTL, clock=clock)

    def request_state_security(self) -> RequestStateSecurity:
        """The SDK boundary's policy: the same keys and principal, so states open on any replica."""
        return RequestStateSecurity(keys=list(self.ring.keys), ttl=APPROVAL_TTL, bind_principal=self.principal)

    @property
    def guarded_tools(self) -> frozenset[str]:
        """The names registered with `tool` so far."""
        return frozenset(self._guarded)

    def install(self, mcp: MCPServer) -> None:
        """Make the guarded tools re-ask on a state the SDK boundary refuses (see `reask`). The middleware
        asks the guard on every request, so tools registered before or after this call are all covered."""
        install_before_boundary(mcp, ReaskOnUnopenedState(self._guarded.__contains__))

    def tool(self, mcp: MCPServer, name: str, **options: Any) -> Callable[[ToolFunction], ToolFunction]:
        """Register a tool that asks a person first: `mcp.tool(name=name, **options)`, and guarded by name."""
        self._guarded.add(name)
        register: Callable[[ToolFunction], ToolFunction] = mcp.tool(name=name, **options)
        return register

    async def approve(self, ctx: Context, request: ApprovalRequest, confirm_token: str | None) -> Decision:
        """Ask the way this request allows. `confirm_token` counts only on the token path: where a
        dialog can be shown, a person decides, whatever token the model passes along."""
        channel = channel_for(ctx, self.elicitation) if request.dialog else Channel.TOKEN
        if channel is Channel.DIALOG:
            return self._dialog_round(ctx, request)
        if channel is Channel.PUSH:
            return await self._push(ctx, request)
        return self._token(ctx, request, confirm_token)

    def pinned(self, ctx: Context, confirm_token: str | None) -> str:
        """What this call's answer (its request state, else its `confirm_token`) was sealed with as `pinned`,
        when the seal opens for this principal; "" otherwise. It approves nothing (only `approve` does): it
        tells the tool what its arguments resolved to when the question was asked."""
        opened = self.opened(ctx, confirm_token)
        return opened.claim.pinned if opened is not None else ""

    def opened(self, ctx: Context, confirm_token: str | None) -> Opened | None:
        """The seal this call carries (its request state, else its `confirm_token`), opened for this principal
        whatever its target; None when it carries none that opens. It approves nothing: it names the question a
        replay answers, whose approval (if one was given) a ledger may have recorded under `identity`."""
        principal = self._principal_of(ctx)
        for sealer, text in ((self._states, ctx.request_state), (self._tokens, confirm_token)):
            if text is None:
                continue
            try:
                return sealer.open(text, principal)
            except SealError:
                continue
        return None

    def _principal_of(self, ctx: Context) -> str | None:
        return self.principal(ctx.request_context)

    def _dialog_round(self, ctx: Context, request: ApprovalRequest) -> Decision:
        """2026-07-28: approve only a fresh seal of this exact claim plus a ticked box; else ask (again)."""
        principal = self._principal_of(ctx)
        if ctx.request_state is not None:
            try:
                opened = self._states.verify(ctx.request_state, request.claim, principal)
            except SealError as exc:
                logger.info(
                    "approval state for %s on %s gave no answer (%s): asking again",
                    request.tool,
                    request.target.account,
                    exc,
                )
                return Decision(question=self._ask(request, principal))
            answer = (ctx.input_responses or {}).get(texts.QUESTION_KEY)
            if isinstance(answer, ElicitResult):
                ticked = (answer.content or {}).get(texts.APPROVE_FIELD)
                return self._judge(request, answer.action, ticked, Decision(Channel.DIALOG, identity=opened.identity))
        return Decision(question=self._ask(request, principal))

    def _ask(self, request: ApprovalRequest, principal: str | None) -> InputRequiredResult:
        form = ElicitRequestFormParams(message=request.question, requested_schema=texts.approval_schema())
        return InputRequiredResult(
            input_requests={texts.QUESTION_KEY: ElicitRequest(params=form)},
            request_state=self._states.seal(request.claim, principal),
        )

    @staticmethod
    def _judge(request: ApprovalRequest, action: str, ticked: object, approved: Decision) -> Decision:
        """`approved` if the person accepted with the box ticked (JSON `true`, nothing else); else a refusal."""
        if action != "accept":
            raise ApprovalRefused(texts.declined(request.summary, action))
        if ticked is not True:
            raise ApprovalRefused(texts.not_ticked(request.summary))
        return approved

    async def _push(self, ctx: Context, request: ApprovalRequest) -> Decision:
        """2025-11-25 with a back channel: push the dialog and wait for the person."""
        try:
            answer = await ctx.elicit(request.question, texts.ApprovalForm)
        except MCPError as exc:
            raise ApprovalRefused(texts.dialog_failed(request.summary, exc.error.message)) from None
        except ValueError:  # accepted, but the box is not JSON `true` (e.g. "yes" or 1): not a tick
            raise ApprovalRefused(texts.not_ticked(request.summary)) from None
        ticked = answer.data.approve if isinstance(answer, AcceptedElicitation) else None
        return self._judge(request, answer.action, ticked, Decision(Channel.PUSH))

    def _token(self, ctx: Context, request: ApprovalRequest, confirm_token: str | None) -> Decision:
        """No dialog: the first call returns a sealed token; the same call with it runs."""
        claim = Claim(fingerprint(request.target), pinned=request.pinned)
        principal = self._principal_of(ctx)
        if confirm_token is None:
            token = self._tokens.seal(claim, principal)
            text = texts.token_issued(request.tool, request.summary, token, TOKEN_TTL, self._why(request))
            return Decision(token=TokenIssued(token, text))
        try:
            opened = self._tokens.verify(confirm_token, claim, principal)
        except SealError as exc:
            logger.info("confirm_token for %s on %s refused (%s)", request.tool, request.target.account, exc)
            raise ApprovalRefused(texts.token_refused(request.tool, request.summary)) from None
        return Decision(Channel.TOKEN, identity=opened.identity)

    def _why(self, request: ApprovalRequest) -> str:
        if not request.dialog:
            return texts.WHY_TOKEN_ONLY
        return texts.WHY_NO_DIALOG if self.elicitation else texts.WHY_ELICITATION_OFF
