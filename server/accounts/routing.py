"""Over HTTP with an accounts file, the bearer token selects the account; no argument ever does.

`AccessControl` (in front) accepts only the tokens of the accounts file and puts the token's
principal on the request; `AccountRouter` hands the request to that account's own MCP app. A
request without a principal (no token) gets 401 here too, so no request reaches an account
without its token. The router runs every account app's lifespan (the SDK's request handling).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from starlette.applications import Starlette
from starlette.types import Receive, Scope, Send

from ..http_access import principal_of_scope, respond_unauthorized


class AccountRouter:
    """ASGI app: each request to the account app of its principal."""

    def __init__(self, apps_by_principal: Mapping[str, Starlette]) -> None:
        self._apps = dict(apps_by_principal)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        app = self._apps.get(principal_of_scope(scope) or "")
        if app is None:
            if scope["type"] == "http":
                await respond_unauthorized(send)
            return
        await app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """Start every distinct account app's lifespan on startup, stop them on shutdown."""
        message = await receive()
        assert message["type"] == "lifespan.startup"
        async with contextlib.AsyncExitStack() as stack:
            try:
                for app in {id(a): a for a in self._apps.values()}.values():
                    await stack.enter_async_context(app.router.lifespan_context(app))
            except Exception as exc:
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                return
            await send({"type": "lifespan.startup.complete"})
            message = await receive()
        await send({"type": "lifespan.shutdown.complete"})
