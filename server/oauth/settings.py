"""The IMAP_OAUTH_* settings, read from any mapping of env-like names (the environment, or one account).

`IMAP_OAUTH_PROVIDER` (google, microsoft) fills in the endpoints, the scope and the usual hosts;
any other provider is given by its endpoints. Endpoints must be https, except on a loopback host.
"""

from __future__ import annotations

import json
import stat
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from ..setting_values import ConfigError, Secret, is_loopback, positive_seconds

AuthMode = Literal["password", "oauth2"]
AUTH_MODES: tuple[AuthMode, ...] = ("password", "oauth2")
Mechanism = Literal["auto", "xoauth2", "oauthbearer"]
MECHANISMS: tuple[Mechanism, ...] = ("auto", "xoauth2", "oauthbearer")
ClientAuth = Literal["body", "basic"]
CLIENT_AUTHS: tuple[ClientAuth, ...] = ("body", "basic")
PROVIDERS = ("google", "microsoft")


@dataclass(frozen=True)
class Provider:
    """What a known provider's endpoints, scope and servers are."""

    token_url: str
    device_url: str
    auth_url: str
    scope: str
    #: the settings filled in when unset: IMAP_HOST, SMTP_HOST and SMTP_TLS
    hosts: Mapping[str, str]
    #: the sign-in flow `imap-mcp auth` uses unless told otherwise
    default_flow: Literal["device", "browser"]


def provider(name: str, tenant: str = "common") -> Provider:
    if name == "google":
        return Provider(
            token_url="https://oauth2.googleapis.com/token",
            device_url="https://oauth2.googleapis.com/device/code",
            auth_url="https://accounts.google.com/o/oauth2/v2/auth",
            scope="https://mail.google.com/",
            hosts={"IMAP_HOST": "imap.gmail.com", "SMTP_HOST": "smtp.gmail.com", "SMTP_TLS": "implicit"},
            default_flow="browser",
        )
    base = f"https://login.microsoftonline.com/{tenant}/oauth2/v2.0"
    return Provider(
        token_url=f"{base}/token",
        device_url=f"{base}/devicecode",
        auth_url=f"{base}/authorize",
        scope="https://outlook.office.com/IMAP.AccessAsUser.All https://outlook.office.com/SMTP.Send offline_access",
        hosts={"IMAP_HOST": "outlook.office365.com", "SMTP_HOST": "smtp.office365.com", "SMTP_TLS": "starttls"},
        default_flow="device",
    )


@dataclass(frozen=True)
class OAuthSettings:
    """How to get an access token for the account (one per account; IMAP and SMTP share it)."""

    token_url: str
    client_id: str
    scope: str
    client_secret: Secret | None = field(default=None, repr=False)
    client_auth: ClientAuth = "body"
    #: IMAP_OAUTH_REFRESH_TOKEN: used when no token file is set
    refresh_token: Secret | None = field(default=None, repr=False)
    #: IMAP_OAUTH_TOKEN_FILE: JSON with at least refresh_token, rewritten when the provider rotates it
    token_file: Path | None = None
    mechanism: Mechanism = "auto"
    device_url: str | None = None
    auth_url: str | None = None
    provider: str | None = None
    #: IMAP_TIMEOUT: seconds one request to the provider may take in all
    timeout: float = 30.0


def one_of(env: Mapping[str, str], name: str, valid: tuple[str, ...], default: str) -> str:
    value = env.get(name, "").strip() or default
    if value not in valid:
        raise ConfigError(f"{name}={value!r} is not valid: use one of {', '.join(valid)}.")
    return value


def auth_mode(env: Mapping[str, str], name: str = "IMAP_AUTH", default: str = "password") -> AuthMode:
    return one_of(env, name, AUTH_MODES, default)  # type: ignore[return-value]


def endpoint(env: Mapping[str, str], name: str, default: str | None = None) -> str | None:
    """An endpoint URL: https, or http on a loopback host only."""
    raw = env.get(name, "").strip() or default
    if raw is None:
        return None
    parts = urlsplit(raw)
    secure = parts.scheme == "https" or (parts.scheme == "http" and is_loopback(parts.hostname or ""))
    if not parts.hostname or not secure:
        raise ConfigError(
            f"{name}={raw!r} is not valid: use an https:// URL (http:// only for a loopback host such as 127.0.0.1)."
        )
    return raw


def provider_name(env: Mapping[str, str]) -> str | None:
    raw = env.get("IMAP_OAUTH_PROVIDER", "").strip()
    if not raw:
        return None
    if raw not in PROVIDERS:
        raise ConfigError(
            f"IMAP_OAUTH_PROVIDER={raw!r} is not valid: use google or microsoft, or leave it unset and give "
            "IMAP_OAUTH_TOKEN_URL."
        )
    return raw


def with_provider_hosts(env: Mapping[str, str]) -> Mapping[str, str]:
    """`env` with the provider's IMAP_HOST (and SMTP_HOST with its SMTP_TLS) filled in where unset."""
    name = provider_name(env) if auth_mode(env) == "oauth2" else None
    if name is None:
        return env
    hosts = provider(name, env.get("IMAP_OAUTH_TENANT", "").strip() or "common").hosts
    filled: dict[str, str] = {}  # in front of `env`, which is not copied: only the keys asked for are read
    if not env.get("IMAP_HOST", "").strip():
        filled["IMAP_HOST"] = hosts["IMAP_HOST"]
    if not env.get("SMTP_HOST", "").strip():
        filled["SMTP_HOST"] = hosts["SMTP_HOST"]
        if "SMTP_TLS" not in env:
            filled["SMTP_TLS"] = hosts["SMTP_TLS"]
    return ChainMap(filled, env)  # type: ignore[arg-type]


def read_token_file(path: Path, name: str = "IMAP_OAUTH_TOKEN_FILE") -> Secret:
    """The refresh token in `path`; `ConfigError` naming `name` when the file is unusable."""
    try:
        mode = path.stat().st_mode
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise ConfigError(
            f"{name}={str(path)!r} is not valid: use a readable JSON file holding refresh_token (imap-mcp auth "
            "writes one)."
        ) from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"{name}={str(path)!r} is readable by others: run chmod 600 on it.")
    token = data.get("refresh_token") if isinstance(data, dict) else None
    if not isinstance(token, str) or not token:
        raise ConfigError(
            f"{name}={str(path)!r} is not valid: it holds no refresh_token; sign in with imap-mcp auth to write one."
        )
    return Secret(token)


def _refresh_token(env: Mapping[str, str]) -> tuple[Secret | None, Path | None]:
    raw_file = env.get("IMAP_OAUTH_TOKEN_FILE", "").strip()
    if raw_file:
        path = Path(raw_file).expanduser()
        read_token_file(path)
        return None, path
    token = env.get("IMAP_OAUTH_REFRESH_TOKEN", "").strip()
    if not token:
        raise ConfigError(
            "IMAP_OAUTH_TOKEN_FILE is not set: give the token file written by imap-mcp auth (or the refresh token "
            "itself in IMAP_OAUTH_REFRESH_TOKEN)."
        )
    return Secret(token), None


def load_oauth_settings(
    env: Mapping[str, str], *, need_refresh_token: bool = True, timeout: float | None = None
) -> OAuthSettings:
    """The IMAP_OAUTH_* settings; without `need_refresh_token` (sign-in), no refresh token is looked for.

    `timeout` bounds each request to the provider: IMAP_TIMEOUT (read from `env` when not given).
    """
    name = provider_name(env)
    known = provider(name, env.get("IMAP_OAUTH_TENANT", "").strip() or "common") if name else None
    token_url = endpoint(env, "IMAP_OAUTH_TOKEN_URL", known.token_url if known else None)
    if token_url is None:
        raise ConfigError(
            "IMAP_OAUTH_TOKEN_URL is not set: set IMAP_OAUTH_PROVIDER to google or microsoft, or give the "
            "provider's token endpoint."
        )
    client_id = env.get("IMAP_OAUTH_CLIENT_ID", "").strip()
    if not client_id:
        raise ConfigError(
            "IMAP_OAUTH_CLIENT_ID is not set: give the client ID of the app registered with the provider."
        )
    secret = env.get("IMAP_OAUTH_CLIENT_SECRET", "").strip()
    refresh_token, token_file = _refresh_token(env) if need_refresh_token else (None, None)
    return OAuthSettings(
        token_url=token_url,
        client_id=client_id,
        scope=env.get("IMAP_OAUTH_SCOPE", "").strip() or (known.scope if known else ""),
        client_secret=Secret(secret) if secret else None,
        client_auth=one_of(env, "IMAP_OAUTH_CLIENT_AUTH", CLIENT_AUTHS, "body"),  # type: ignore[arg-type]
        refresh_token=refresh_token,
        token_file=token_file,
        mechanism=one_of(env, "IMAP_OAUTH_MECHANISM", MECHANISMS, "auto"),  # type: ignore[arg-type]
        device_url=endpoint(env, "IMAP_OAUTH_DEVICE_URL", known.device_url if known else None),
        auth_url=endpoint(env, "IMAP_OAUTH_AUTH_URL", known.auth_url if known else None),
        provider=name,
        timeout=positive_seconds(env, "IMAP_TIMEOUT", 30.0) if timeout is None else timeout,
    )
