"""Over HTTP with an accounts file, the bearer token selects the account; no argument ever does.

`AccessControl` (in front) accepts only the accounts' tokens (`http_access.Tokens`), and OAuth
access tokens when `IMAP_MCP_OAUTH_ISSUER` is set, and puts the token's principal (and an access
token's identity) on the request; `AccountRouter` hands the request to that account's own MCP
app: a static token's account, or the account whose `oauth_subjects` lists the access token's
`IMAP_MCP_OAUTH_SUBJECT_CLAIM` (each person only their mailbox; a valid access token that reaches
no account gets 403). A request without a principal (no token) gets 401 here too, so no request
reaches an account without its token.

The accounts may change while serving (`apply`, after the accounts file was re-read: `reloading`).
An added account is served from then on; a removed one's tokens are refused from then on (401),
its app stops and its connections are closed (one in use as it ends). A changed account is served
anew: a new app and pool, the old ones stopped; a change of its tokens alone keeps both.

An account's app is built on its first request (building one registers every tool: a tenth of a
second or more, and most of a megabyte, paid only for the accounts in use), and runs its lifespan
(the SDK's request handling) until the account goes, the server stops, or it is evicted to keep at
most `IMAP_MCP_MAX_BUILT_ACCOUNTS` apps built (`built`).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable

import anyio
import anyio.abc
import anyio.to_thread
from starlette.types import Receive, Scope, Send

from ..accounts.loading import Account, Accounts
from ..authorization.tokens import IDENTITY_STATE_KEY, Identity
from .built import DEFAULT_MAX_BUILT, BuiltApps, ServedAccount
from .http_access import Tokens, principal_for_token, principal_of_scope, respond_error, respond_unauthorized
from .reloading import RELOAD_POLL, AccountsFile


class AccountRouter:
    """ASGI app: each request to the account app of its principal; the accounts are replaced by `apply`.

    With `reloading`, the accounts file is re-read on SIGHUP and whenever it changes, while the app runs.
    """

    def __init__(
        self,
        accounts: Accounts,
        tokens: Tokens,
        serve: Callable[[Account], ServedAccount],
        reloading: AccountsFile | None = None,
        max_built: int = DEFAULT_MAX_BUILT,
        subject_claim: str = "sub",
    ) -> None:
        """`subject_claim`: the access token's claim an account's `oauth_subjects` lists."""
        self._initial = accounts
        self._subject_claim = subject_claim
        self._by_subject: dict[str, ServedAccount] = {}
        self._tokens = tokens
        self._serve = serve
        self._reloading = reloading
        self._served: dict[str, ServedAccount] = {}
        self._by_principal: dict[str, ServedAccount] = {}
        self._built = BuiltApps(max_built)
        self._group: anyio.abc.TaskGroup | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        identity = (scope.get("state") or {}).get(IDENTITY_STATE_KEY)
        if isinstance(identity, Identity):
            served = self._by_subject.get(self._subject_of(identity))
        else:
            served = self._by_principal.get(principal_of_scope(scope) or "")
        if served is None or self._group is None:
            await self._refuse(scope, send, identity)
            return
        async with self._built.app_of(served, self._group) as app:
            if app is None:
                await self._refuse(scope, send, identity)
                return
            await app(scope, receive, send)

    async def _refuse(self, scope: Scope, send: Send, identity: object) -> None:
        """No mailbox for this caller: a signed-in person whose subject no account lists gets 403 (signing in again
        does not help), any other caller 401."""
        if scope["type"] != "http":
            return
        if isinstance(identity, Identity):
            await respond_error(
                send,
                403,
                f"This sign-in reaches no mailbox here: ask the operator to add your {self._subject_claim} to "
                "an account's oauth_subjects.",
            )
        else:
            await respond_unauthorized(send)

    def apply(self, accounts: Accounts) -> None:
        """Serve `accounts` from now on (see the module's docstring); call it on the event loop."""
        served: dict[str, ServedAccount] = {}
        for account in accounts.accounts:
            old = self._served.get(account.name)
            if old is not None and old.same_mailbox_and_policy(account):
                old.account = account
                served[account.name] = old
            else:
                served[account.name] = self._serve(account)
        retired = [old for name, old in self._served.items() if served.get(name) is not old]
        self._served = served
        tokens = [(token, s) for s in served.values() for token in s.account.auth_tokens]
        self._by_principal = {principal_for_token(token.reveal()): s for token, s in tokens}
        self._tokens.replace(token for token, _ in tokens)
        self._by_subject = {subject: s for s in served.values() for subject in s.account.oauth_subjects}
        for old in retired:
            self._retire(old)

    def _subject_of(self, identity: Identity) -> str:
        """The value of the subject claim (`sub` is the identity's subject); "" when the token has none."""
        if self._subject_claim == "sub":
            return identity.subject
        value = identity.claims.get(self._subject_claim)
        return value if isinstance(value, str) else ""

    def _retire(self, served: ServedAccount) -> None:
        """Stop the account's app and close its connections (idle ones now, one in use as its operation ends)."""
        served.stop()
        self._built.forget(served)
        if self._group is not None:
            self._group.start_soon(anyio.to_thread.run_sync, served.pool.close_all)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """Serve the accounts from startup to shutdown; re-read the accounts file meanwhile."""
        message = await receive()
        assert message["type"] == "lifespan.startup"
        async with anyio.create_task_group() as group:
            self._group = group
            self.apply(self._initial)
            watching = anyio.CancelScope()
            if self._reloading is not None:
                group.start_soon(self._reload_when_asked, self._reloading, watching)
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
            watching.cancel()
            for served in self._served.values():
                served.stop()
        self._group = None
        await send({"type": "lifespan.shutdown.complete"})

    async def _reload_when_asked(self, accounts_file: AccountsFile, scope: anyio.CancelScope) -> None:
        """Re-read the accounts file on SIGHUP and whenever it changed, until `scope` is cancelled."""
        hangup = anyio.Event()

        async def on_hangup() -> None:
            with (
                contextlib.suppress(NotImplementedError, RuntimeError, ValueError),  # not the main thread
                anyio.open_signal_receiver(signal.SIGHUP) as signals,
            ):
                async for _ in signals:
                    hangup.set()

        with scope:
            async with anyio.create_task_group() as group:
                group.start_soon(on_hangup)
                while True:
                    with anyio.move_on_after(RELOAD_POLL):
                        await hangup.wait()
                    asked = hangup.is_set()
                    if asked:
                        hangup = anyio.Event()
                    if not asked and not accounts_file.changed():
                        continue
                    accounts = await anyio.to_thread.run_sync(
                        accounts_file.reload, "SIGHUP" if asked else "the file changed"
                    )
                    if accounts is not None:
                        self.apply(accounts)
