"""What a client learns of this resource server: its protected resource metadata (RFC 9728) and the challenge of a
401 (`WWW-Authenticate: Bearer resource_metadata="…"`).

The metadata is served at the path-inserted URI of the resource (for `https://host/mcp`:
`/.well-known/oauth-protected-resource/mcp`, as the SDK builds it) and at the root form
(`/.well-known/oauth-protected-resource`), which clients try next; both without a token. The
SDK's own route is not used: it writes an issuer without a path with a trailing slash, which a
client then finds is not the authorization server's issuer.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.routes import build_resource_metadata_url
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
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


def metadata_document(settings: ResourceServerSettings) -> dict[str, Any]:
    """The protected resource metadata: the SDK's model, with the resource and the issuer exactly as configured
    (pydantic writes `https://login.example.com` as `https://login.example.com/`, and a client compares the
    issuer it discovers through this list with the authorization server's own, character for character)."""
    model = ProtectedResourceMetadata(
        resource=AnyHttpUrl(settings.audience),
        authorization_servers=[AnyHttpUrl(settings.issuer)],
        scopes_supported=list(settings.scopes),
    )
    document: dict[str, Any] = model.model_dump(mode="json", exclude_none=True)
    return {**document, "resource": settings.audience, "authorization_servers": [settings.issuer]}


def metadata_routes(settings: ResourceServerSettings) -> list[Route]:
    """The metadata at the path-inserted URI of the resource (where the SDK puts it) and at the root."""
    document = metadata_document(settings)

    async def metadata(request: Request) -> Response:
        return JSONResponse(document, headers={"Cache-Control": "public, max-age=3600"})

    paths = dict.fromkeys([urlsplit(metadata_url(settings)).path, ROOT_METADATA_PATH])
    return [Route(path, metadata, methods=["GET"]) for path in paths]


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
