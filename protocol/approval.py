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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
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


#: what the server knows of a target now, as lines for a person (read only when they are shown)
Details = Callable[[], Awaitable[tuple[str, ...]]]
#: what a second confirmation the operator's policy asks for is about, or None when it asks none
Second = Callable[[], Awaitable[str | None]]


@dataclass(frozen=True)
class ApprovalRequest:
    """One change to approve. `question` is the dialog text the approval binds; `summary` one line for results.

    `details` are shown below the question (a dialog) or in the token's text: what the server knows of the target
    when it asks (arrival times, sizes, recipients never written to). They are read only then (not on the round that
    carries the answer, so an approved call costs no more), and they are not bound: the target's fingerprint binds
    what runs. `second`, read on every round, names a second confirmation the operator's policy asks for: a second
    box to tick in the dialog, a second token on the token path."""

    tool: str
    target: Target
    question: str
    summary: str
    dialog: bool = True  #: False: the two-call token is enough (a reversible change)
    #: what the call's arguments resolved to (opaque here), sealed into the question's state or token so the
    #: answer can act on exactly that (`Guard.pinned`); the target's fingerprint still binds what runs
    pinned: str = ""
    details: Details | None = field(default=None, compare=False)
    second: Second | None = field(default=None, compare=False)

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
        #: the token of a second confirmation (`ApprovalRequest.second`): only it, never a first token, runs the change
        self._second_tokens = Sealer(ring, purpose="confirm-token-second", ttl=TOKEN_TTL, clock=clock)

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
            return await self._dialog_round(ctx, request)
        if channel is Channel.PUSH:
            return await self._push(ctx, request)
        return await self._token(ctx, request, confirm_token)

    def will_ask(self, ctx: Context, confirm_token: str | None) -> bool:
        """Whether a call like this one is likely to be shown a question (or given a first token) rather than carry
        an answer: a tool reads the `details` it will show at once then, in the command that plans the change."""
        channel = channel_for(ctx, self.elicitation)
        if channel is Channel.DIALOG:
            return ctx.request_state is None
        return channel is Channel.PUSH or confirm_token is None

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
        tokens = (self._tokens, self._second_tokens)
        for sealer, text in ((self._states, ctx.request_state), *((t, confirm_token) for t in tokens)):
            if text is None:
                continue
            try:
                return sealer.open(text, principal)
            except SealError:
                continue
        return None

    def _principal_of(self, ctx: Context) -> str | None:
        return self.principal(ctx.request_context)

    async def _dialog_round(self, ctx: Context, request: ApprovalRequest) -> Decision:
        """2026-07-28: approve only a fresh seal of this exact claim plus a ticked box (two where the policy asks a
        second confirmation); else ask (again)."""
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
                return Decision(question=await self._ask(request, principal))
            answer = (ctx.input_responses or {}).get(texts.QUESTION_KEY)
            if isinstance(answer, ElicitResult):
                content = answer.content or {}
                second = await _second(request)
                if second is not None and answer.action == "accept" and texts.SECOND_FIELD not in content:
                    # the form answered had no second box (what the policy asks it for arose since): ask with it
                    return Decision(question=await self._ask(request, principal, second))
                return self._judge(
                    request,
                    answer.action,
                    content.get(texts.APPROVE_FIELD),
                    content.get(texts.SECOND_FIELD) if second is not None else True,
                    Decision(Channel.DIALOG, identity=opened.identity),
                )
        return Decision(question=await self._ask(request, principal))

    async def _ask(
        self, request: ApprovalRequest, principal: str | None, second: str | None = None
    ) -> InputRequiredResult:
        second = second if second is not None else await _second(request)
        message = texts.dialog_message(request.question, await _details(request), second)
        form = ElicitRequestFormParams(message=message, requested_schema=texts.approval_schema(second))
        return InputRequiredResult(
            input_requests={texts.QUESTION_KEY: ElicitRequest(params=form)},
            request_state=self._states.seal(request.claim, principal),
        )

    @staticmethod
    def _judge(
        request: ApprovalRequest, action: str, ticked: object, second_ticked: object, approved: Decision
    ) -> Decision:
        """`approved` if the person accepted with the box ticked (JSON `true`, nothing else), and the second box
        where the policy asks for one (`second_ticked`: True where it asks none); else a refusal."""
        if action != "accept":
            raise ApprovalRefused(texts.declined(request.summary, action))
        if ticked is not True:
            raise ApprovalRefused(texts.not_ticked(request.summary))
        if second_ticked is not True:
            raise ApprovalRefused(texts.second_not_ticked(request.summary))
        return approved

    async def _push(self, ctx: Context, request: ApprovalRequest) -> Decision:
        """2025-11-25 with a back channel: push the dialog and wait for the person."""
        second = await _second(request)
        message = texts.dialog_message(request.question, await _details(request), second)
        form = texts.ApprovalForm if second is None else texts.ApprovalFormWithSecond
        try:
            answer = await ctx.elicit(message, form)
        except MCPError as exc:
            raise ApprovalRefused(texts.dialog_failed(request.summary, exc.error.message)) from None
        except ValueError:  # accepted, but a box is not JSON `true` (e.g. "yes" or 1): not a tick
            raise ApprovalRefused(texts.not_ticked(request.summary)) from None
        data = answer.data if isinstance(answer, AcceptedElicitation) else None
        ticked = data.approve if data is not None else None
        second_ticked = data.approve_new if isinstance(data, texts.ApprovalFormWithSecond) else second is None
        return self._judge(request, answer.action, ticked, second_ticked, Decision(Channel.PUSH))

    async def _token(self, ctx: Context, request: ApprovalRequest, confirm_token: str | None) -> Decision:
        """No dialog: the first call returns a sealed token; the same call with it runs. Where the policy asks a
        second confirmation, that call returns a second token instead, and the call with the second one runs."""
        claim = Claim(fingerprint(request.target), pinned=request.pinned)
        principal = self._principal_of(ctx)
        if confirm_token is None:
            token = self._tokens.seal(claim, principal)
            why = self._why(request)
            text = texts.token_issued(request.tool, request.summary, token, TOKEN_TTL, why, await _details(request))
            return Decision(token=TokenIssued(token, text))
        try:
            second_opened = self._second_tokens.verify(confirm_token, claim, principal)
        except SealError:
            pass  # not a second token: perhaps a first one
        else:
            return Decision(Channel.TOKEN, identity=second_opened.identity)
        try:
            opened = self._tokens.verify(confirm_token, claim, principal)
        except SealError as exc:
            logger.info("confirm_token for %s on %s refused (%s)", request.tool, request.target.account, exc)
            raise ApprovalRefused(texts.token_refused(request.tool, request.summary)) from None
        second = await _second(request)
        if second is not None:
            token = self._second_tokens.seal(claim, principal)
            text = texts.second_token_issued(request.tool, request.summary, token, TOKEN_TTL, second)
            return Decision(token=TokenIssued(token, text))
        return Decision(Channel.TOKEN, identity=opened.identity)

    def _why(self, request: ApprovalRequest) -> str:
        if not request.dialog:
            return texts.WHY_TOKEN_ONLY
        return texts.WHY_NO_DIALOG if self.elicitation else texts.WHY_ELICITATION_OFF


async def _details(request: ApprovalRequest) -> tuple[str, ...]:
    return await request.details() if request.details is not None else ()


async def _second(request: ApprovalRequest) -> str | None:
    return await request.second() if request.second is not None else None
