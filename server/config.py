"""Settings from the environment.

Every setting is read once at start. A missing or invalid one raises `ConfigError`, whose
message is the single line the CLI prints before it exits with code 2. Secret values are
held in `Secret`, whose repr never shows them.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from imap_mcp.protocol.errors import ImapMcpError

from .errors import OutgoingError
from .outgoing.compose import parse_address

if TYPE_CHECKING:
    from .oauth.settings import AuthMode, OAuthSettings
    from .webhooks.settings import WebhookSettings

TlsMode = Literal["implicit", "starttls", "none"]
TLS_MODES: tuple[TlsMode, ...] = ("implicit", "starttls", "none")


class ConfigError(ImapMcpError, ValueError):
    """A setting is missing or invalid; the message names the variable and what is valid.

    `exit_code` is what the CLI exits with: 2 for a bad setting, except `ELICITATION`, whose
    invalid values exit 1 (the value is shared with other MCP servers in one environment).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Secret:
    """A string that never shows itself in repr, str or logs."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


@dataclass(frozen=True)
class ImapSettings:
    host: str
    port: int
    username: str
    password: Secret = field(repr=False)
    tls: TlsMode = "implicit"
    ca_file: Path | None = None
    timeout: float = 30.0
    #: IMAP_AUTH: password, or oauth2 with the IMAP_OAUTH_* settings in `oauth`
    auth: AuthMode = "password"
    oauth: OAuthSettings | None = None

    @property
    def account(self) -> str:
        """The account's identity, `login@host:port`: two accounts that differ in any of the three are two accounts.
        It names the account in approvals, in the store (webhooks, the approval ledger) and in logs."""
        return f"{self.username}@{self.host.lower()}:{self.port}"

    @property
    def legacy_account(self) -> str:
        """How versions before the port was part of the identity named the account in the store (`login@host`)."""
        return f"{self.username}@{self.host}"


@dataclass(frozen=True)
class SmtpSettings:
    """Where and how sent mail leaves: the account's submission server."""

    host: str
    port: int
    username: str
    password: Secret = field(repr=False)
    #: SMTP_FROM: the From address, e.g. `Alice <alice@example.com>`
    sender: str
    tls: TlsMode = "implicit"
    ca_file: Path | None = None
    timeout: float = 30.0
    #: SMTP_AUTH (default: IMAP_AUTH); oauth2 uses the account's IMAP_OAUTH_* settings
    auth: AuthMode = "password"
    oauth: OAuthSettings | None = None


MIN_SEAL_KEY_LENGTH = 32


@dataclass(frozen=True)
class Settings:
    imap: ImapSettings
    #: SMTP_*: None when SMTP_HOST is unset, and then the sending tools are not offered
    smtp: SmtpSettings | None = None
    #: ELICITATION: ask through a dialog where the client can show one; false = two-call token only
    elicitation: bool = True
    #: IMAP_MCP_SEAL_KEYS: the first seals, every one opens; empty = a random key for this process
    seal_keys: tuple[Secret, ...] = field(default=(), repr=False)
    #: IMAP_DOWNLOAD_DIR: where get_attachments writes files; None = return them inline
    download_dir: Path | None = None
    #: IMAP_MCP_SPEC_FIXTURES: register the conformance-suite fixtures (test-only)
    spec_fixtures: bool = False
    #: IMAP_MCP_WEBHOOKS, IMAP_MCP_STORE*, IMAP_MCP_WEBHOOK_*: the new-mail webhook and its store
    webhooks: WebhookSettings = field(default_factory=lambda: _webhook_defaults())
    #: IMAP_TRUSTED_AUTHSERV_ID: the receiving servers whose Authentication-Results headers are believed
    trusted_authserv_ids: tuple[str, ...] = ()


def _webhook_defaults() -> WebhookSettings:
    from .webhooks.settings import WebhookSettings

    return WebhookSettings()


def is_loopback(host: str) -> bool:
    """True for `localhost` and any loopback address (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _required(env: Mapping[str, str], name: str, what: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(f"{name} is not set: give {what}.")
    return value


def _choice(env: Mapping[str, str], name: str, valid: tuple[str, ...], default: str) -> str:
    value = env.get(name)
    if value is None:
        return default
    if value not in valid:
        raise ConfigError(f"{name}={value!r} is not valid: use one of {', '.join(valid)}.")
    return value


def _port(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise ConfigError(f"{name}={raw!r} is not valid: use a port number from 1 to 65535.")
    return int(raw)


def _positive_float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ConfigError(f"{name}={raw!r} is not valid: use a number of seconds greater than 0.")
    return value


def flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    return _choice(env, name, ("true", "false"), "true" if default else "false") == "true"


def _ca_file(env: Mapping[str, str], name: str = "IMAP_CA_FILE") -> Path | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_file():
        raise ConfigError(f"{name}={raw!r} is not valid: use the path of a readable PEM file.")
    return path


def _elicitation(env: Mapping[str, str]) -> bool:
    value = env.get("ELICITATION")
    if value is None:
        return True
    if value not in ("true", "false"):
        raise ConfigError(f"ELICITATION={value!r} is not valid: use true or false.", exit_code=1)
    return value == "true"


def key_list(env: Mapping[str, str], name: str = "IMAP_MCP_SEAL_KEYS") -> tuple[Secret, ...]:
    """A comma-separated key ring (IMAP_MCP_SEAL_KEYS, IMAP_MCP_STORE_KEYS): the first one seals or encrypts."""
    raw = env.get(name, "")
    keys = tuple(k.strip() for k in raw.split(",") if k.strip())
    for position, key in enumerate(keys, start=1):
        if len(key) < MIN_SEAL_KEY_LENGTH:
            raise ConfigError(
                f"{name} key {position} is too short: use comma-separated random keys of at least "
                f"{MIN_SEAL_KEY_LENGTH} characters each (e.g. from: openssl rand -base64 32)."
            )
        if key in keys[: position - 1]:
            raise ConfigError(
                f"{name} key {position} repeats an earlier key: list each key once (first seals, every one opens)."
            )
    return tuple(Secret(k) for k in keys)


_AUTHSERV_ID = re.compile(r"[^\s;()\"\\,]{1,253}")


def _trusted_authserv_ids(env: Mapping[str, str]) -> tuple[str, ...]:
    """IMAP_TRUSTED_AUTHSERV_ID: comma-separated authserv-ids, each as the receiving server writes it."""
    raw = env.get("IMAP_TRUSTED_AUTHSERV_ID", "")
    ids = tuple(part.strip().lower() for part in raw.split(",") if part.strip())
    for authserv_id in ids:
        if not _AUTHSERV_ID.fullmatch(authserv_id):
            raise ConfigError(
                f"IMAP_TRUSTED_AUTHSERV_ID={raw!r} is not valid: use comma-separated authserv-ids, each the name "
                "your receiving mail server writes first in its Authentication-Results headers (e.g. mx.example.com), "
                "without spaces, quotes or semicolons."
            )
    return ids


def _download_dir(env: Mapping[str, str]) -> Path | None:
    raw = env.get("IMAP_DOWNLOAD_DIR", "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_dir() or not os.access(path, os.W_OK):
        raise ConfigError(f"IMAP_DOWNLOAD_DIR={raw!r} is not valid: use an existing directory this user can write to.")
    return path.resolve()


def _tls_mode(env: Mapping[str, str], protocol: str, host: str) -> TlsMode:
    """`<protocol>_TLS` (default implicit); `none` only for a loopback `<protocol>_HOST`."""
    tls: TlsMode = _choice(env, f"{protocol}_TLS", TLS_MODES, "implicit")  # type: ignore[assignment]
    if tls == "none" and not is_loopback(host):
        raise ConfigError(
            f"{protocol}_TLS='none' is not valid for {protocol}_HOST={host!r}: an unencrypted connection is "
            "accepted only for a loopback host; use implicit or starttls."
        )
    return tls


def load_imap_settings(env: Mapping[str, str]) -> ImapSettings:
    from .oauth.settings import auth_mode, load_oauth_settings, with_provider_hosts

    env = with_provider_hosts(env)
    host = _required(env, "IMAP_HOST", "the IMAP server's host name, e.g. imap.example.com")
    tls = _tls_mode(env, "IMAP", host)
    auth = auth_mode(env)
    timeout = _positive_float(env, "IMAP_TIMEOUT", 30.0)
    password = (
        Secret(_required(env, "IMAP_PASSWORD", "the password of the mailbox (or set IMAP_AUTH=oauth2)"))
        if auth == "password"
        else Secret("")
    )
    return ImapSettings(
        host=host,
        port=_port(env, "IMAP_PORT", 993 if tls == "implicit" else 143),
        username=_required(env, "IMAP_USERNAME", "the login name of the mailbox"),
        password=password,
        tls=tls,
        ca_file=_ca_file(env),
        timeout=timeout,
        auth=auth,
        oauth=load_oauth_settings(env, timeout=timeout) if auth == "oauth2" else None,
    )


SMTP_DEFAULT_PORTS: dict[TlsMode, int] = {"implicit": 465, "starttls": 587, "none": 25}


def _smtp_sender(env: Mapping[str, str], username: str) -> str:
    """SMTP_FROM, else the login name when it is an email address; checked as one plain address."""
    raw = env.get("SMTP_FROM", "").strip()
    name = "SMTP_FROM" if raw else "IMAP_USERNAME"
    if not raw and "@" not in username:
        raise ConfigError(
            f"SMTP_FROM is not set and IMAP_USERNAME={username!r} is not an email address: set SMTP_FROM to the "
            "address mail is sent from, e.g. 'Alice <alice@example.com>'."
        )
    try:
        return str(parse_address(raw or username, field="From"))
    except OutgoingError as exc:
        raise ConfigError(f"{name} is not valid as the sender: {exc}") from None


def load_smtp_settings(env: Mapping[str, str], imap: ImapSettings) -> SmtpSettings | None:
    """The SMTP settings, or None when SMTP_HOST is unset; login and CA file default to the IMAP ones."""
    from .oauth.settings import auth_mode, with_provider_hosts

    env = with_provider_hosts(env)
    host = env.get("SMTP_HOST", "").strip()
    if not host:
        return None
    tls = _tls_mode(env, "SMTP", host)
    username = env.get("SMTP_USERNAME", "").strip() or imap.username
    password = Secret(env["SMTP_PASSWORD"]) if env.get("SMTP_PASSWORD") else imap.password
    auth = auth_mode(env, "SMTP_AUTH", imap.auth)
    if auth == "password" and not password.reveal():
        raise ConfigError(
            "SMTP_PASSWORD is not set: give the SMTP password (IMAP_AUTH=oauth2 has none to reuse), or set "
            "SMTP_AUTH=oauth2."
        )
    return SmtpSettings(
        host=host,
        port=_port(env, "SMTP_PORT", SMTP_DEFAULT_PORTS[tls]),
        username=username,
        password=password,
        sender=_smtp_sender(env, imap.username),
        tls=tls,
        ca_file=_ca_file(env, "SMTP_CA_FILE") or imap.ca_file,
        timeout=_positive_float(env, "SMTP_TIMEOUT", imap.timeout),
        auth=auth,
        oauth=_smtp_oauth(env, imap) if auth == "oauth2" else None,
    )


def _smtp_oauth(env: Mapping[str, str], imap: ImapSettings) -> OAuthSettings:
    """The account's OAuth settings: the IMAP ones, or read for SMTP alone (IMAP_AUTH=password)."""
    from .oauth.settings import load_oauth_settings

    return imap.oauth or load_oauth_settings(env, timeout=imap.timeout)


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read every setting from `env` (default: the process environment)."""
    from .webhooks.settings import load_webhook_settings

    env = os.environ if env is None else env
    elicitation = _elicitation(env)  # first: its own exit code (1) wins over any other bad setting
    imap = load_imap_settings(env)
    return Settings(
        imap=imap,
        smtp=load_smtp_settings(env, imap),
        elicitation=elicitation,
        seal_keys=key_list(env),
        download_dir=_download_dir(env),
        spec_fixtures=flag(env, "IMAP_MCP_SPEC_FIXTURES", False),
        webhooks=load_webhook_settings(env),
        trusted_authserv_ids=_trusted_authserv_ids(env),
    )
