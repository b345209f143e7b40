"""What every settings module shares, below all of them: the configuration error and how problems are gathered,
secrets that never show themselves, and the small readers of one variable (a choice, a flag, a port, a number of
seconds, a file, a key ring). At server/'s top level, not in a feature's folder, so that `config` and the feature
settings
(`oauth.settings`, `webhooks.settings`, ...) import it and never each other.
"""

from __future__ import annotations

import difflib
import ipaddress
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import ParamSpec, TypeVar

from imap_mcp.protocol.errors import ImapMcpError

P = ParamSpec("P")
T = TypeVar("T")

#: the exit code of every configuration error (`imap-mcp --help` says it too)
CONFIG_ERROR_EXIT = 2

#: the name of every setting imap-mcp reads (a secret's `_FILE` form aside); README's Configuration lists each


class ConfigError(ImapMcpError, ValueError):
    """Settings are missing or invalid: one line per problem, each naming the variable and what is valid.

    The CLI prints each line and exits with `exit_code`, the same for every setting.
    """

    exit_code = CONFIG_ERROR_EXIT


class Problems:
    """The problems found while reading settings: each reader that fails adds its lines, and the reading goes on
    with a stand-in value, so that one run names every problem (`raise_any`)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __len__(self) -> int:
        return len(self.lines)

    def read(self, fallback: T, reader: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`reader(*args, **kwargs)`, or `fallback` after noting its `ConfigError`."""
        try:
            return reader(*args, **kwargs)
        except ConfigError as exc:
            self.add(str(exc))
            return fallback

    def add(self, message: str) -> None:
        self.lines.extend(line for line in message.splitlines() if line not in self.lines)

    def raise_any(self) -> None:
        """`ConfigError` with every problem, one per line, if there is any."""
        if self.lines:
            raise ConfigError("\n".join(self.lines))


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


MIN_SEAL_KEY_LENGTH = 32
#: the shortest bearer token accepted (IMAP_MCP_AUTH_TOKENS, an accounts file's tokens)


def is_loopback(host: str) -> bool:
    """True for `localhost` and any loopback address (127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def required(env: Mapping[str, str], name: str, what: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ConfigError(f"{name} is not set: give {what}.")
    return value


def one_of(env: Mapping[str, str], name: str, valid: tuple[str, ...], default: str) -> str:
    value = env.get(name)
    if value is None:
        return default
    if value not in valid:
        raise ConfigError(f"{name}={value!r} is not valid: use one of {', '.join(valid)}.")
    return value


def port_number(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= 65535:
        raise ConfigError(f"{name}={raw!r} is not valid: use a port number from 1 to 65535.")
    return int(raw)


def positive_seconds(env: Mapping[str, str], name: str, default: float) -> float:
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
    return one_of(env, name, ("true", "false"), "true" if default else "false") == "true"


def pem_file(env: Mapping[str, str], name: str = "IMAP_CA_FILE") -> Path | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_file():
        raise ConfigError(f"{name}={raw!r} is not valid: use the path of a readable PEM file.")
    return path


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


KNOWN_SETTINGS = frozenset(
    {
        "ELICITATION",
        "IMAP_ALLOW_EXECUTABLE_ATTACHMENTS",
        "IMAP_AUTH",
        "IMAP_CA_FILE",
        "IMAP_DOWNLOAD_DIR",
        "IMAP_MAX_ATTACHMENT_BYTES",
        "IMAP_HOST",
        "IMAP_MAILBOX_ARCHIVE",
        "IMAP_MAILBOX_DRAFTS",
        "IMAP_MAILBOX_JUNK",
        "IMAP_MAILBOX_SENT",
        "IMAP_MAILBOX_TRASH",
        "IMAP_MCP_ACCOUNTS_FILE",
        "IMAP_MCP_ALLOWED_HOSTS",
        "IMAP_MCP_ALLOW_UNAUTHENTICATED",
        "IMAP_MCP_AUTH_TOKENS",
        "IMAP_MCP_DIALOG_TIMEZONE",
        "IMAP_MCP_DISABLE_TOOLS",
        "IMAP_MCP_LEGACY_HTTP",
        "IMAP_MCP_MAX_BUILT_ACCOUNTS",
        "IMAP_MCP_MAX_CONNECTIONS",
        "IMAP_MCP_OAUTH_AUDIENCE",
        "IMAP_MCP_OAUTH_ISSUER",
        "IMAP_MCP_OAUTH_SCOPES",
        "IMAP_MCP_OAUTH_SUBJECT_CLAIM",
        "IMAP_MCP_READ_ONLY",
        "IMAP_MCP_SEAL_KEYS",
        "IMAP_MCP_SEND_ALLOW",
        "IMAP_MCP_SEND_CONFIRM_NEW",
        "IMAP_MCP_SEND_MAX_RECIPIENTS",
        "IMAP_MCP_SPEC_FIXTURES",
        "IMAP_MCP_STORE",
        "IMAP_MCP_STORE_KEYS",
        "IMAP_MCP_TOOLS",
        "IMAP_MCP_WEBHOOKS",
        "IMAP_MCP_WEBHOOK_MAX_EVENTS",
        "IMAP_MCP_WEBHOOK_MAX_EVENTS_CEILING",
        "IMAP_MCP_WEBHOOK_RETENTION",
        "IMAP_MCP_WEBHOOK_RETENTION_CEILING",
        "IMAP_MCP_WEBHOOK_RETRY_INTERVAL",
        "IMAP_OAUTH_AUTH_URL",
        "IMAP_OAUTH_CLIENT_AUTH",
        "IMAP_OAUTH_CLIENT_ID",
        "IMAP_OAUTH_CLIENT_SECRET",
        "IMAP_OAUTH_DEVICE_URL",
        "IMAP_OAUTH_MECHANISM",
        "IMAP_OAUTH_PROVIDER",
        "IMAP_OAUTH_REFRESH_TOKEN",
        "IMAP_OAUTH_SCOPE",
        "IMAP_OAUTH_TENANT",
        "IMAP_OAUTH_TOKEN_FILE",
        "IMAP_OAUTH_TOKEN_URL",
        "IMAP_UPLOAD_DIR",
        "IMAP_PASSWORD",
        "IMAP_PORT",
        "IMAP_TIMEOUT",
        "IMAP_TLS",
        "IMAP_TRUSTED_AUTHSERV_ID",
        "IMAP_USERNAME",
        "SMTP_AUTH",
        "SMTP_CA_FILE",
        "SMTP_FROM",
        "SMTP_MAX_MESSAGE_BYTES",
        "SMTP_HOST",
        "SMTP_PASSWORD",
        "SMTP_PORT",
        "SMTP_SIGNATURE",
        "SMTP_SIGNATURE_FILE",
        "SMTP_TIMEOUT",
        "SMTP_TLS",
        "SMTP_USERNAME",
    }
)
#: the names of imap-mcp's settings start so; another name so made is looked at for a misspelling
SETTING_PREFIXES = ("IMAP_", "SMTP_", "ELICITATION")


def did_you_mean(name: str) -> str | None:
    """The setting `name` is most likely a misspelling of, or None."""
    close = difflib.get_close_matches(name, KNOWN_SETTINGS, n=1, cutoff=0.8)
    return close[0] if close else None
