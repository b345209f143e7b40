"""Settings from the environment.

Every setting is read once at start. What is missing or invalid is reported all at once: each
problem is one line of one `ConfigError` (`Problems` gathers them), which the CLI prints before
it exits with code 2 (`CONFIG_ERROR_EXIT`), the same for every setting. Secret values are held
in `Secret`, whose repr never shows them. A name close to a setting's (`IMAP_PASWORD`) gets a
"did you mean" (`did_you_mean`), from the names of every setting, `KNOWN_SETTINGS`.
"""

from __future__ import annotations

import difflib
import ipaddress
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, ParamSpec, TypeVar

from imap_mcp.protocol.errors import ImapMcpError

from .errors import OutgoingError
from .local_time import SETTING as DIALOG_TIMEZONE
from .local_time import DialogClock, zone_named
from .outgoing.compose import parse_address
from .outgoing.policy import SendPolicy, read_send_policy

if TYPE_CHECKING:
    from .oauth.settings import AuthMode, OAuthSettings
    from .webhooks.settings import WebhookSettings

P = ParamSpec("P")
T = TypeVar("T")

TlsMode = Literal["implicit", "starttls", "none"]
TLS_MODES: tuple[TlsMode, ...] = ("implicit", "starttls", "none")
#: the exit code of every configuration error (`imap-mcp --help` says it too)
CONFIG_ERROR_EXIT = 2

#: the name of every setting imap-mcp reads (a secret's `_FILE` form aside); README's Configuration lists each
KNOWN_SETTINGS = frozenset(
    {
        "ELICITATION",
        "IMAP_ALLOW_EXECUTABLE_ATTACHMENTS",
        "IMAP_AUTH",
        "IMAP_CA_FILE",
        "IMAP_DOWNLOAD_DIR",
        "IMAP_MAX_ATTACHMENT_BYTES",
        "IMAP_HOST",
        "IMAP_MCP_ACCOUNTS_FILE",
        "IMAP_MCP_ALLOWED_HOSTS",
        "IMAP_MCP_ALLOW_UNAUTHENTICATED",
        "IMAP_MCP_AUTH_TOKENS",
        "IMAP_MCP_DIALOG_TIMEZONE",
        "IMAP_MCP_DISABLE_TOOLS",
        "IMAP_MCP_LEGACY_HTTP",
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
        "SMTP_TIMEOUT",
        "SMTP_TLS",
        "SMTP_USERNAME",
    }
)
#: the names of imap-mcp's settings start so; another name so made is looked at for a misspelling
SETTING_PREFIXES = ("IMAP_", "SMTP_", "ELICITATION")


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


def did_you_mean(name: str) -> str | None:
    """The setting `name` is most likely a misspelling of, or None."""
    close = difflib.get_close_matches(name, KNOWN_SETTINGS, n=1, cutoff=0.8)
    return close[0] if close else None


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


#: SMTP_MAX_MESSAGE_BYTES by default: what submission servers commonly take
DEFAULT_MAX_MESSAGE_BYTES = 25 * 1024 * 1024


@dataclass(frozen=True)
class OutgoingFiles:
    """What outgoing mail may carry: files from IMAP_UPLOAD_DIR (None: no files from disk), and SMTP_MAX_MESSAGE_BYTES
    in all (also for a saved draft)."""

    upload_dir: Path | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES


#: IMAP_MAX_ATTACHMENT_BYTES by default, and its bounds: attachment bytes returned inline at once (they are held in
#: memory, and again as base64)
DEFAULT_MAX_ATTACHMENT_BYTES = 8 * 1024 * 1024
MIN_MAX_ATTACHMENT_BYTES = 1024
MAX_MAX_ATTACHMENT_BYTES = 64 * 1024 * 1024

MIN_SEAL_KEY_LENGTH = 32
#: the shortest bearer token accepted (IMAP_MCP_AUTH_TOKENS, an accounts file's tokens)
MIN_TOKEN_LENGTH = 16


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
    #: IMAP_ALLOW_EXECUTABLE_ATTACHMENTS: deliver attachments that run when opened (get_attachments, resources/read)
    allow_executable_attachments: bool = False
    #: IMAP_MAX_ATTACHMENT_BYTES: attachment bytes returned inline by one get_attachments call or one resources/read
    max_attachment_bytes: int = DEFAULT_MAX_ATTACHMENT_BYTES
    #: IMAP_UPLOAD_DIR, SMTP_MAX_MESSAGE_BYTES: the files outgoing mail may carry
    outgoing_files: OutgoingFiles = field(default_factory=OutgoingFiles)
    #: IMAP_MCP_SPEC_FIXTURES: register the conformance-suite fixtures (test-only)
    spec_fixtures: bool = False
    #: IMAP_MCP_WEBHOOKS, IMAP_MCP_STORE*, IMAP_MCP_WEBHOOK_*: the new-mail webhook and its store
    webhooks: WebhookSettings = field(default_factory=lambda: _webhook_defaults())
    #: IMAP_TRUSTED_AUTHSERV_ID: the receiving servers whose Authentication-Results headers are believed
    trusted_authserv_ids: tuple[str, ...] = ()
    # -- what a person is shown and what may be sent (`_dialog_clock`, `_send_policy`) --
    #: IMAP_MCP_DIALOG_TIMEZONE: the zone dialog times are written in (default: the server's local zone)
    dialog_clock: DialogClock = field(default_factory=DialogClock)
    #: IMAP_MCP_SEND_ALLOW, IMAP_MCP_SEND_MAX_RECIPIENTS, IMAP_MCP_SEND_CONFIRM_NEW: the operator's send policy
    send_policy: SendPolicy = field(default_factory=SendPolicy)


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
        raise ConfigError(f"ELICITATION={value!r} is not valid: use true or false.")
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


def _dialog_clock(env: Mapping[str, str]) -> DialogClock:
    """IMAP_MCP_DIALOG_TIMEZONE: an IANA zone name, checked against this system's zone database."""
    raw = env.get(DIALOG_TIMEZONE, "").strip()
    if not raw:
        return DialogClock()
    if zone_named(raw) is None:
        raise ConfigError(
            f"{DIALOG_TIMEZONE}={raw!r} is not valid: use an IANA time zone name such as Europe/Berlin or UTC "
            "(unset: the server's local zone)."
        )
    return DialogClock(raw)


def _send_policy(env: Mapping[str, str]) -> SendPolicy:
    """IMAP_MCP_SEND_*: the operator's send policy (`outgoing.policy`)."""
    try:
        return read_send_policy(env)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _download_dir(env: Mapping[str, str]) -> Path | None:
    raw = env.get("IMAP_DOWNLOAD_DIR", "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_dir() or not os.access(path, os.W_OK):
        raise ConfigError(f"IMAP_DOWNLOAD_DIR={raw!r} is not valid: use an existing directory this user can write to.")
    return path.resolve()


def _max_attachment_bytes(env: Mapping[str, str]) -> int:
    raw = env.get("IMAP_MAX_ATTACHMENT_BYTES", "").strip()
    if not raw:
        return DEFAULT_MAX_ATTACHMENT_BYTES
    if not (raw.isascii() and raw.isdigit()) or not MIN_MAX_ATTACHMENT_BYTES <= int(raw) <= MAX_MAX_ATTACHMENT_BYTES:
        raise ConfigError(
            f"IMAP_MAX_ATTACHMENT_BYTES={raw!r} is not valid: use a whole number of bytes from "
            f"{MIN_MAX_ATTACHMENT_BYTES} to {MAX_MAX_ATTACHMENT_BYTES} (default {DEFAULT_MAX_ATTACHMENT_BYTES}); "
            "for larger attachments set IMAP_DOWNLOAD_DIR."
        )
    return int(raw)


def _upload_dir(env: Mapping[str, str]) -> Path | None:
    raw = env.get("IMAP_UPLOAD_DIR", "").strip()
    if not raw:
        return None
    path = Path(raw).expanduser()
    if not path.is_dir() or not os.access(path, os.R_OK | os.X_OK):
        raise ConfigError(f"IMAP_UPLOAD_DIR={raw!r} is not valid: use an existing directory this user can read.")
    return path.resolve()


def _outgoing_files(env: Mapping[str, str]) -> OutgoingFiles:
    raw = env.get("SMTP_MAX_MESSAGE_BYTES", "").strip()
    if raw and (not raw.isdigit() or int(raw) < 1024):
        raise ConfigError(
            f"SMTP_MAX_MESSAGE_BYTES={raw!r} is not valid: use a whole number of bytes, at least 1024 "
            f"(default {DEFAULT_MAX_MESSAGE_BYTES})."
        )
    return OutgoingFiles(_upload_dir(env), int(raw) if raw else DEFAULT_MAX_MESSAGE_BYTES)


def _tls_mode(env: Mapping[str, str], protocol: str, host: str) -> TlsMode:
    """`<protocol>_TLS` (default implicit); `none` only for a loopback `<protocol>_HOST`."""
    tls: TlsMode = _choice(env, f"{protocol}_TLS", TLS_MODES, "implicit")  # type: ignore[assignment]
    if tls == "none" and host and not is_loopback(host):  # no host: that problem is reported on its own
        raise ConfigError(
            f"{protocol}_TLS='none' is not valid for {protocol}_HOST={host!r}: an unencrypted connection is "
            "accepted only for a loopback host; use implicit or starttls."
        )
    return tls


def load_imap_settings(env: Mapping[str, str]) -> ImapSettings:
    problems = Problems()
    imap = read_imap_settings(env, problems)
    problems.raise_any()
    assert imap is not None  # no problem, so read
    return imap


def read_imap_settings(env: Mapping[str, str], problems: Problems) -> ImapSettings | None:
    """The IMAP settings, or None after adding every problem found in them to `problems`."""
    from .oauth.settings import auth_mode, load_oauth_settings, with_provider_hosts

    before = len(problems)
    env = problems.read(env, with_provider_hosts, env)
    host = problems.read("", _required, env, "IMAP_HOST", "the IMAP server's host name, e.g. imap.example.com")
    tls: TlsMode = problems.read("implicit", _tls_mode, env, "IMAP", host)
    auth: AuthMode = problems.read("password", auth_mode, env)
    timeout = problems.read(30.0, _positive_float, env, "IMAP_TIMEOUT", 30.0)
    password = (
        Secret(
            problems.read("", _required, env, "IMAP_PASSWORD", "the password of the mailbox (or set IMAP_AUTH=oauth2)")
        )
        if auth == "password"
        else Secret("")
    )
    default_port = 993 if tls == "implicit" else 143
    port = problems.read(default_port, _port, env, "IMAP_PORT", default_port)
    username = problems.read("", _required, env, "IMAP_USERNAME", "the login name of the mailbox")
    ca_file = problems.read(None, _ca_file, env)
    oauth = problems.read(None, load_oauth_settings, env, timeout=timeout) if auth == "oauth2" else None
    if len(problems) > before:
        return None
    return ImapSettings(
        host=host,
        port=port,
        username=username,
        password=password,
        tls=tls,
        ca_file=ca_file,
        timeout=timeout,
        auth=auth,
        oauth=oauth,
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
    problems = Problems()
    smtp = read_smtp_settings(env, imap, problems)
    problems.raise_any()
    return smtp


def read_smtp_settings(env: Mapping[str, str], imap: ImapSettings | None, problems: Problems) -> SmtpSettings | None:
    """The SMTP settings, or None when SMTP_HOST is unset or after adding their problems to `problems`; login and
    CA file default to the IMAP ones. Without `imap` (its settings have problems) only what the SMTP_* settings say
    on their own is checked: nothing is reported that fixing the IMAP settings might change."""
    from .oauth.settings import auth_mode, with_provider_hosts

    env = problems.read(env, with_provider_hosts, env)
    host = env.get("SMTP_HOST", "").strip()
    if not host:
        return None
    before = len(problems)
    tls: TlsMode = problems.read("implicit", _tls_mode, env, "SMTP", host)
    port = problems.read(SMTP_DEFAULT_PORTS[tls], _port, env, "SMTP_PORT", SMTP_DEFAULT_PORTS[tls])
    ca_file = problems.read(None, _ca_file, env, "SMTP_CA_FILE")
    timeout = problems.read(30.0, _positive_float, env, "SMTP_TIMEOUT", imap.timeout if imap else 30.0)
    auth: AuthMode = problems.read("password", auth_mode, env, "SMTP_AUTH", imap.auth if imap else "password")
    if imap is None:
        if env.get("SMTP_FROM", "").strip():
            problems.read("", _smtp_sender, env, "")
        return None
    username = env.get("SMTP_USERNAME", "").strip() or imap.username
    password = Secret(env["SMTP_PASSWORD"]) if env.get("SMTP_PASSWORD") else imap.password
    if auth == "password" and not password.reveal():
        problems.add(
            "SMTP_PASSWORD is not set: give the SMTP password (IMAP_AUTH=oauth2 has none to reuse), or set "
            "SMTP_AUTH=oauth2."
        )
    sender = problems.read("", _smtp_sender, env, imap.username)
    oauth = problems.read(None, _smtp_oauth, env, imap) if auth == "oauth2" else None
    if len(problems) > before:
        return None
    return SmtpSettings(
        host=host,
        port=port,
        username=username,
        password=password,
        sender=sender,
        tls=tls,
        ca_file=ca_file or imap.ca_file,
        timeout=timeout,
        auth=auth,
        oauth=oauth,
    )


def _smtp_oauth(env: Mapping[str, str], imap: ImapSettings) -> OAuthSettings:
    """The account's OAuth settings: the IMAP ones, or read for SMTP alone (IMAP_AUTH=password)."""
    from .oauth.settings import load_oauth_settings

    return imap.oauth or load_oauth_settings(env, timeout=imap.timeout)


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Read every setting from `env` (default: the process environment); `ConfigError` with every problem."""
    from .webhooks.settings import load_webhook_settings

    env = os.environ if env is None else env
    problems = Problems()
    elicitation = problems.read(True, _elicitation, env)
    imap = read_imap_settings(env, problems)
    smtp = read_smtp_settings(env, imap, problems)
    seal_keys = problems.read((), key_list, env)
    download_dir = problems.read(None, _download_dir, env)
    allow_executables = problems.read(False, flag, env, "IMAP_ALLOW_EXECUTABLE_ATTACHMENTS", False)
    max_attachment_bytes = problems.read(DEFAULT_MAX_ATTACHMENT_BYTES, _max_attachment_bytes, env)
    outgoing_files = problems.read(None, _outgoing_files, env)
    spec_fixtures = problems.read(False, flag, env, "IMAP_MCP_SPEC_FIXTURES", False)
    trusted_authserv_ids = problems.read((), _trusted_authserv_ids, env)
    webhooks = problems.read(None, load_webhook_settings, env)
    dialog_clock = problems.read(DialogClock(), _dialog_clock, env)
    send_policy = problems.read(SendPolicy(), _send_policy, env)
    problems.raise_any()
    assert imap is not None and webhooks is not None and outgoing_files is not None  # no problem, so read
    return Settings(
        imap=imap,
        smtp=smtp,
        elicitation=elicitation,
        seal_keys=seal_keys,
        download_dir=download_dir,
        allow_executable_attachments=allow_executables,
        max_attachment_bytes=max_attachment_bytes,
        outgoing_files=outgoing_files,
        spec_fixtures=spec_fixtures,
        webhooks=webhooks,
        trusted_authserv_ids=trusted_authserv_ids,
        dialog_clock=dialog_clock,
        send_policy=send_policy,
    )
