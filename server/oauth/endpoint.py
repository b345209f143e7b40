"""One form-encoded POST to a provider endpoint (token or device authorization), with client authentication.

The client secret goes in the form body or as HTTP Basic (IMAP_OAUTH_CLIENT_AUTH). Nothing here
retries, and no answer, token or secret is ever put into an error message.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from imap_mcp.server.oauth.errors import OAuthError, ProviderRefused
from imap_mcp.server.oauth.settings import OAuthSettings

MAX_ANSWER_BYTES = 1 << 20


def _host(url: str) -> str:
    return urlsplit(url).netloc


def _client_fields(settings: OAuthSettings) -> tuple[dict[str, str], dict[str, str]]:
    """(form fields, headers) that identify the client."""
    secret = settings.client_secret.reveal() if settings.client_secret else None
    if secret is not None and settings.client_auth == "basic":
        pair = f"{quote(settings.client_id, safe='')}:{quote(secret, safe='')}"
        return {}, {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}
    fields = {"client_id": settings.client_id}
    if secret is not None:
        fields["client_secret"] = secret
    return fields, {}


def post_form(settings: OAuthSettings, url: str, fields: dict[str, str]) -> dict[str, Any]:
    """The JSON object the endpoint answered; `ProviderRefused` for an OAuth error, `OAuthError` otherwise."""
    client, headers = _client_fields(settings)
    request = urllib.request.Request(
        url,
        data=urlencode({**fields, **client}).encode("ascii"),
        headers={**headers, "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=settings.timeout) as answer:  # https, or http on loopback only
            return _json_object(answer.read(MAX_ANSWER_BYTES), url)
    except urllib.error.HTTPError as exc:
        body = _json_object(exc.read(MAX_ANSWER_BYTES), url, status=exc.code)
        code = body.get("error")
        if isinstance(code, str) and code:
            interval = body.get("interval")
            raise ProviderRefused(
                f"The OAuth provider at {_host(url)} refused the request ({code}).",
                code=code,
                interval=float(interval) if isinstance(interval, int | float) else None,
            ) from None
        raise OAuthError(f"The OAuth provider at {_host(url)} answered HTTP {exc.code}; try again later.") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise OAuthError(
            f"Cannot reach the OAuth provider at {_host(url)} ({reason}); check the network and IMAP_OAUTH_TOKEN_URL."
        ) from None


def _json_object(raw: bytes, url: str, status: int = 200) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise OAuthError(
            f"The OAuth provider at {_host(url)} answered HTTP {status} without a JSON object; check the endpoint URL."
        )
    return data
