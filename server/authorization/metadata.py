"""What a client learns of this resource server: its protected resource metadata (RFC 9728) and the challenge of a
401 (`WWW-Authenticate: Bearer resource_metadata="…"`).

The metadata is served at the path-inserted URI of the resource (for `https://host/mcp`:
`/.well-known/oauth-protected-resource/mcp`, the SDK's route) and at the root form
(`/.well-known/oauth-protected-resource`), which clients try next; both without a token.
"""

from __future__ import annotations

from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from .settings import ResourceServerSettings

ROOT_METADATA_PATH = "/.well-known/oauth-protected-resource"


def metadata_url(settings: ResourceServerSettings) -> str:
    """The path-inserted URL of this resource's metadata (the one the challenge names)."""
    return str(build_resource_metadata_url(AnyHttpUrl(settings.audience)))


def challenge(settings: ResourceServerSettings, token_given: bool) -> bytes:
    """The `WWW-Authenticate` value of a 401: where the metadata is, the scopes to ask for, and
    `error="invalid_token"` only when a token was given (RFC 6750 §3.1: none for a request without one)."""
    parts = [f'resource_metadata="{metadata_url(settings)}"', f'scope="{" ".join(settings.scopes)}"']
    if token_given:
        parts.insert(0, 'error="invalid_token"')
    return ("Bearer " + ", ".join(parts)).encode()


def metadata_routes(settings: ResourceServerSettings) -> list[Route]:
    """The SDK's path-inserted metadata route, and the same document at the root."""
    routes = create_protected_resource_routes(
        AnyHttpUrl(settings.audience), [AnyHttpUrl(settings.issuer)], scopes_supported=list(settings.scopes)
    )
    document = ProtectedResourceMetadata(
        resource=AnyHttpUrl(settings.audience),
        authorization_servers=[AnyHttpUrl(settings.issuer)],
        scopes_supported=list(settings.scopes),
    )
    if not any(route.path == ROOT_METADATA_PATH for route in routes):
        handler = ProtectedResourceMetadataHandler(document)
        routes.append(Route(ROOT_METADATA_PATH, handler.handle, methods=["GET"]))
    return routes


class ServingMetadata:
    """ASGI middleware: the metadata routes answered here, without a token; every other request to `app`."""

    def __init__(self, app: ASGIApp, settings: ResourceServerSettings) -> None:
        self.app = app
        self._routes = {route.path: route for route in metadata_routes(settings)}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = self._routes.get(scope.get("path", "")) if scope["type"] == "http" else None
        if route is None:
            await self.app(scope, receive, send)
            return
        await route.handle(scope, receive, send)
