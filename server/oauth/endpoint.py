"""One form-encoded POST to a provider endpoint (token or device authorization), with client authentication.

The client secret goes in the form body or as HTTP Basic (IMAP_OAUTH_CLIENT_AUTH). Nothing here
retries. The request has IMAP_TIMEOUT in all (`outbound_http.post`), follows no redirect, and
reads at most `MAX_ANSWER_BYTES` of the answer; of what the provider says, only its `error` code
reaches an error message, as an excerpt without any secret sent.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus, urlencode, urlsplit

from ..outbound_http import OutboundError, Redirected, TooSlow, Unreachable, excerpt, post
from .errors import OAuthError, ProviderRefused
from .settings import OAuthSettings

#: a token answer is a few KB (an id_token included)
MAX_ANSWER_BYTES = 64 * 1024
#: the form fields whose values are secrets
SECRET_FIELDS = ("client_secret", "refresh_token", "device_code", "code", "code_verifier")


def where(url: str) -> str:
    """The endpoint's host and port, for a message (never a user name or password in the URL)."""
    parts = urlsplit(url)
    host = parts.hostname or "?"
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{parts.port}" if parts.port else host


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


def _secrets(settings: OAuthSettings, form: dict[str, str], headers: dict[str, str], also: Iterable[str]) -> set[str]:
    """Every value of the request an answer must not bring into a message, as sent and as form-encoded."""
    values = {form[name] for name in SECRET_FIELDS if form.get(name)} | {v for v in also if v}
    if settings.client_secret:
        values.add(settings.client_secret.reveal())
    if "Authorization" in headers:
        values.add(headers["Authorization"].removeprefix("Basic "))
    return values | {quote_plus(v) for v in values} | {quote(v, safe="") for v in values}


def _setting(settings: OAuthSettings, url: str) -> str:
    return "IMAP_OAUTH_DEVICE_URL" if url == settings.device_url else "IMAP_OAUTH_TOKEN_URL"


def post_form(
    settings: OAuthSettings, url: str, fields: dict[str, str], also_secret: Iterable[str] = ()
) -> dict[str, Any]:
    """The JSON object the endpoint answered; `ProviderRefused` for an OAuth error, `OAuthError` otherwise.

    `also_secret`: values not in the request that must not be shown either (the access token in use).
    """
    client, headers = _client_fields(settings)
    form = {**fields, **client}
    secrets = _secrets(settings, form, headers, also_secret)
    host, setting = where(url), _setting(settings, url)
    try:
        answer = post(
            url,  # https, or http on loopback only (`settings.endpoint`)
            urlencode(form).encode("ascii"),
            {**headers, "Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"},
            seconds=settings.timeout,
            limit=MAX_ANSWER_BYTES,
        )
    except TooSlow:
        raise OAuthError(
            f"The OAuth provider at {host} did not answer within IMAP_TIMEOUT={settings.timeout:g} s (for the whole "
            "request); try again later, or raise IMAP_TIMEOUT for a slow provider."
        ) from None
    except Redirected as exc:
        raise OAuthError(
            f"The OAuth provider at {host} answered HTTP {exc.status}, a redirect, which is not followed (the client "
            f"credentials go to the configured endpoint only); set {setting} to the endpoint itself."
        ) from None
    except Unreachable as exc:
        raise OAuthError(
            f"Cannot reach the OAuth provider at {host} ({excerpt(str(exc), secrets)}); check the network and "
            f"{setting}."
        ) from None
    except OutboundError as exc:
        raise OAuthError(f"The request to the OAuth provider at {host} failed ({exc}); try again later.") from None
    if answer.cut:
        raise OAuthError(
            f"The OAuth provider at {host} answered HTTP {answer.status} with more than {MAX_ANSWER_BYTES // 1024} KB, "
            f"which no token answer needs; check {setting}."
        )
    body = _json_object(answer.body, host, answer.status)
    if 200 <= answer.status < 300:
        return body
    code = body.get("error")
    if isinstance(code, str) and code:
        shown = excerpt(code, secrets)
        interval = body.get("interval")
        raise ProviderRefused(
            f"The OAuth provider at {host} refused the request ({shown}).",
            code=shown,
            interval=float(interval) if isinstance(interval, int | float) else None,
        )
    raise OAuthError(f"The OAuth provider at {host} answered HTTP {answer.status}; try again later.")


def _json_object(raw: bytes, host: str, status: int) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise OAuthError(
            f"The OAuth provider at {host} answered HTTP {status} without a JSON object; check the endpoint URL."
        )
    return data
