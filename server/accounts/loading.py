"""The accounts a server serves: `IMAP_MCP_ACCOUNTS_FILE` (TOML), or the environment alone.

Every account table takes the environment's settings by the same names; the environment's
values are the defaults for every account. Each account's settings are read by the same
functions as the environment's (`config.load_settings`, `policy.load_policy`) from the
environment overlaid with the table, so every setting they know is known here too. A key those
functions never read is a mistake (a typo, or e.g. SMTP_PORT without SMTP_HOST) and reported.

A secret may come from a file instead: `IMAP_PASSWORD_FILE` (any of `SECRET_SETTINGS` + `_FILE`)
holds the value, one trailing newline ignored; in the environment and in account tables alike.
The file is validated whole, and so is the environment: every problem is one line (in the file
naming the account and the key), all of them in one run, and start-up stops with exit code 2. An
invalid value is reported, then set aside (in the file the environment's default takes its place,
in the environment the setting's default) so the check goes on to find what else is wrong. A name
that is no setting's but close to one (`IMAP_PASWORD`) is reported with the name it is close to:
in the file as a problem, in the environment (which holds other programs' variables too) as a
warning at start, or with the problems when there are any.
"""

from __future__ import annotations

import re
import stat
import tomllib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ..config import MIN_TOKEN_LENGTH, Settings, load_settings
from ..setting_values import KNOWN_SETTINGS, SETTING_PREFIXES, ConfigError, Secret, did_you_mean
from ..tools.policy import ToolPolicy, load_policy

T = TypeVar("T")

ACCOUNTS_FILE_VARIABLE = "IMAP_MCP_ACCOUNTS_FILE"
#: the account's name when the environment alone configures the server
ENVIRONMENT_ACCOUNT = "default"
ACCOUNT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
TOKENS_KEY = "auth_tokens"
TOKENS_FILE_KEY = "auth_tokens_file"
#: the OAuth identities (values of `IMAP_MCP_OAUTH_SUBJECT_CLAIM`) whose access tokens reach the account
SUBJECTS_KEY = "oauth_subjects"
#: settings of the whole server: in the environment only, never in an account table
SERVER_WIDE = frozenset(
    {
        "IMAP_MCP_ACCOUNTS_FILE",
        "IMAP_MCP_AUTH_TOKENS",
        "IMAP_MCP_ALLOWED_HOSTS",
        "IMAP_MCP_LEGACY_HTTP",
        "IMAP_MCP_SEAL_KEYS",
        "IMAP_MCP_SPEC_FIXTURES",
        "IMAP_MCP_MAX_CONNECTIONS",
        "IMAP_MCP_MAX_BUILT_ACCOUNTS",
        "IMAP_MCP_OAUTH_ISSUER",
        "IMAP_MCP_OAUTH_AUDIENCE",
        "IMAP_MCP_OAUTH_SCOPES",
        "IMAP_MCP_OAUTH_SUBJECT_CLAIM",
    }
)
SECRET_FILE_SUFFIX = "_FILE"
#: the settings whose value may instead be read from the file named by the setting + `_FILE`
SECRET_SETTINGS = frozenset({"IMAP_PASSWORD", "SMTP_PASSWORD", "IMAP_OAUTH_CLIENT_SECRET", "IMAP_OAUTH_REFRESH_TOKEN"})
#: the setting a `ConfigError`'s message starts with (every message names its setting first)
SETTING_NAME = re.compile(r"^[A-Z][A-Z0-9_]*")


@dataclass(frozen=True)
class Account:
    """One mailbox this server serves, with its policy and what selects it over HTTP: bearer tokens, and the
    OAuth identities whose access tokens reach it."""

    name: str
    settings: Settings
    policy: ToolPolicy = field(default_factory=ToolPolicy)
    auth_tokens: tuple[Secret, ...] = field(default=(), repr=False)
    oauth_subjects: tuple[str, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class Accounts:
    accounts: tuple[Account, ...]
    #: the accounts file, or None when the environment alone configures the one account
    source: Path | None = None
    #: lines to print once at start (a file readable by other users)
    warnings: tuple[str, ...] = ()

    def names(self) -> list[str]:
        return [a.name for a in self.accounts]

    def named(self, name: str) -> Account:
        for account in self.accounts:
            if account.name == name:
                return account
        raise ConfigError(f"--account {name!r} is not in {self.source}: use one of {', '.join(self.names())}.")


class _Recorder(Mapping[str, str]):
    """A mapping that remembers which keys were read, to find the settings nobody reads."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = values
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        value = self._values[key]
        self.read.add(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def is_secret_file_key(key: str) -> bool:
    """`IMAP_PASSWORD_FILE`, `SMTP_PASSWORD_FILE`, …: a secret of ours read from a file (others' are left alone,
    and so are settings that are themselves a path, such as `IMAP_OAUTH_TOKEN_FILE`)."""
    return key.endswith(SECRET_FILE_SUFFIX) and key.removesuffix(SECRET_FILE_SUFFIX) in SECRET_SETTINGS


def exposure_warning(path: Path, what: str) -> str | None:
    """A warning when `path` can be read or written by users other than its owner."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        return f"{what} {path} can be read by other users (mode {stat.filemode(mode)}): chmod 600 {path}"
    return None


def _read_secret(key: str, raw: str, warnings: list[str]) -> str:
    path = Path(raw).expanduser()
    try:
        value = path.read_text(encoding="utf-8").removesuffix("\n").removesuffix("\r")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{key}={raw!r} cannot be read ({exc.__class__.__name__}): give a readable file.") from None
    if not value:
        raise ConfigError(f"{key}={raw!r} is empty: put the secret in the file.")
    warning = exposure_warning(path, key)
    if warning:
        warnings.append(warning)
    return value


def with_secret_files(layer: Mapping[str, str], problems: list[str], warnings: list[str]) -> dict[str, str]:
    """`layer` with every `X_FILE` secret replaced by `X` read from the file; a conflict is a problem."""
    resolved = {k: v for k, v in layer.items() if not is_secret_file_key(k)}
    for key, raw in layer.items():
        if not is_secret_file_key(key):
            continue
        name = key[: -len(SECRET_FILE_SUFFIX)]
        if name in layer:
            problems.append(f"{name} and {key} are both set: set one of them.")
            continue
        try:
            resolved[name] = _read_secret(key, raw, warnings)
        except ConfigError as exc:
            problems.append(str(exc))
    return resolved


def _account_value(key: str, value: object) -> str | None:
    """A TOML value as the environment would hold it, or None when it is no setting's type."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    return None


def _key_problem(key: str) -> str | None:
    if key in SERVER_WIDE:
        return f"{key} is a setting of the whole server: set it in the environment, not per account."
    if not key.startswith(SETTING_PREFIXES):
        return f"{key} is not a setting: use the environment's names (IMAP_*, SMTP_*, ELICITATION) or {TOKENS_KEY}."
    if not is_setting_name(key):
        close = did_you_mean(key)
        return f"{key} is not a setting: " + (
            f"did you mean {close}?" if close else "see Configuration in the README for every setting's name."
        )
    return None


def is_setting_name(key: str) -> bool:
    """A setting's name, or the name of a secret's file (`IMAP_PASSWORD_FILE`)."""
    return key in KNOWN_SETTINGS or is_secret_file_key(key)


def misspelt_settings(env: Mapping[str, str]) -> list[str]:
    """A line for each variable of `env` named like a setting but close to another's name (`IMAP_PASWORD`)."""
    lines = []
    for key in env:
        close = did_you_mean(key) if key.startswith(SETTING_PREFIXES) and not is_setting_name(key) else None
        if close is not None:
            lines.append(f"{key} is set, but it is not a setting: did you mean {close}?")
    return lines


def _tokens(table: Mapping[str, object], problems: list[str], warnings: list[str]) -> list[str]:
    """The account's bearer tokens, from `auth_tokens` (a list) and/or `auth_tokens_file` (one per line)."""
    tokens: list[str] = []
    listed = table.get(TOKENS_KEY, [])
    if not isinstance(listed, list) or not all(isinstance(t, str) for t in listed):
        problems.append(f'{TOKENS_KEY} is not a list of strings: write {TOKENS_KEY} = ["…", "…"].')
    else:
        tokens.extend(listed)
    raw_file = table.get(TOKENS_FILE_KEY)
    if raw_file is not None:
        try:
            tokens.extend(_read_secret(TOKENS_FILE_KEY, str(raw_file), warnings).split())
        except ConfigError as exc:
            problems.append(str(exc))
    for position, token in enumerate(tokens, start=1):
        if len(token.strip()) < MIN_TOKEN_LENGTH:
            problems.append(
                f"{TOKENS_KEY} token {position} is too short: use random tokens of at least {MIN_TOKEN_LENGTH} "
                "characters (e.g. from: openssl rand -hex 24)."
            )
    return [t.strip() for t in tokens]


def _subjects(table: Mapping[str, object], problems: list[str]) -> tuple[str, ...]:
    listed = table.get(SUBJECTS_KEY, [])
    if not isinstance(listed, list) or not all(isinstance(s, str) and s.strip() for s in listed):
        problems.append(f'{SUBJECTS_KEY} is not a list of non-empty strings: write {SUBJECTS_KEY} = ["…", "…"].')
        return ()
    return tuple(s.strip() for s in listed)


def _account_layer(table: Mapping[str, object], problems: list[str]) -> dict[str, str]:
    layer: dict[str, str] = {}
    for key, value in table.items():
        if key in (TOKENS_KEY, TOKENS_FILE_KEY, SUBJECTS_KEY):
            continue
        problem = _key_problem(key)
        text = _account_value(key, value)
        if problem is None and text is None:
            problem = f"{key} has a {type(value).__name__}: give a string, number or true/false."
        if problem is not None:
            problems.append(problem)
        else:
            layer[key] = text  # type: ignore[assignment]
    return layer


def _every_problem(
    loader: Callable[[Mapping[str, str]], T], defaults: Mapping[str, str], layer: Mapping[str, str], problems: list[str]
) -> tuple[T | None, set[str]]:
    """`loader` over `defaults` and the `layer` in front of them, and the keys it looked at; or None. Every line of
    its `ConfigError` is a problem; each invalid value of the layer is then set aside (the default takes its place)
    and the loader runs again, to find what those values hid. None when a problem remains that is not the layer's
    (a missing setting, an invalid default)."""
    remaining = dict(layer)
    while True:
        env = _Recorder({**defaults, **remaining})
        try:
            return loader(env), env.read | (layer.keys() - remaining.keys())
        except ConfigError as exc:
            lines = str(exc).splitlines()
            problems.extend(line for line in lines if line not in problems)
            named = {found.group() for line in lines if (found := SETTING_NAME.match(line))} & remaining.keys()
            if not named:
                return None, env.read
            for key in named:
                del remaining[key]


def _account(
    name: str, table: object, defaults: Mapping[str, str], warnings: list[str]
) -> tuple[Account | None, list[str]]:
    """One account from its table over `defaults`, or the problems found in it."""
    problems: list[str] = []
    if not ACCOUNT_NAME.match(name):
        problems.append("the name is not valid: use letters, digits, '.', '_' and '-' (at most 64).")
    if not isinstance(table, dict):
        return None, [*problems, "is not a table: write [accounts.NAME] with its settings below."]
    tokens = _tokens(table, problems, warnings)
    subjects = _subjects(table, problems)
    given = _account_layer(table, problems)
    layer = with_secret_files(given, problems, warnings)
    settings, settings_read = _every_problem(load_settings, defaults, layer, problems)
    policy, policy_read = _every_problem(load_policy, defaults, layer, problems)
    if settings is None or policy is None:
        return None, problems
    read = settings_read | policy_read
    unused = [k for k in given if k.removesuffix(SECRET_FILE_SUFFIX) not in read and k not in read]
    problems.extend(
        f"{key} is not used: it is not needed with these settings (e.g. SMTP_PORT without SMTP_HOST)." for key in unused
    )
    if problems:
        return None, problems
    return Account(name, settings, policy, tuple(Secret(t) for t in tokens), subjects), []


def _read_file(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as file:
            return tomllib.load(file)
    except OSError as exc:
        raise ConfigError(
            f"{ACCOUNTS_FILE_VARIABLE}={str(path)!r} cannot be read ({exc.strerror}): give the path of a TOML file."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{ACCOUNTS_FILE_VARIABLE} {path} is not valid TOML: {exc}.") from None


def _tables(data: Mapping[str, object], path: Path) -> Mapping[str, object]:
    unknown = [k for k in data if k != "accounts"]
    accounts = data.get("accounts")
    if unknown or not isinstance(accounts, dict) or not accounts:
        raise ConfigError(
            f"{ACCOUNTS_FILE_VARIABLE} {path} must hold only [accounts.NAME] tables, at least one"
            + (f" (found {', '.join(unknown)})" if unknown else "")
            + "."
        )
    return accounts


def _repeated_tokens(accounts: list[Account]) -> list[str]:
    owner: dict[Secret, str] = {}
    problems = []
    for account in accounts:
        for token in account.auth_tokens:
            if token in owner:
                problems.append(
                    f"[accounts.{account.name}] an auth token is also one of [accounts.{owner[token]}]: "
                    "give every account its own tokens."
                )
            owner.setdefault(token, account.name)
    return problems


def _repeated_subjects(accounts: list[Account]) -> list[str]:
    owner: dict[str, str] = {}
    problems = []
    for account in accounts:
        for subject in account.oauth_subjects:
            if subject in owner and owner[subject] != account.name:
                problems.append(
                    f"[accounts.{account.name}] an oauth subject is also one of [accounts.{owner[subject]}]: "
                    "each person reaches one mailbox."
                )
            owner.setdefault(subject, account.name)
    return problems


def _same_mailbox(accounts: list[Account]) -> list[str]:
    """Accounts that name one mailbox (the same login, host and port): they would share its webhook, its outbox
    and its approvals' records, so each must be one account."""
    first: dict[str, str] = {}
    problems = []
    for account in accounts:
        identity = account.settings.imap.account
        if identity in first:
            problems.append(
                f"[accounts.{account.name}] logs in as {identity}, as [accounts.{first[identity]}] does: two "
                "accounts of one mailbox would share its webhook and records; keep one of them."
            )
        first.setdefault(identity, account.name)
    return problems


def load_from_file(path: Path, env: Mapping[str, str]) -> Accounts:
    warnings: list[str] = []
    tables = _tables(_read_file(path), path)
    environment_problems: list[str] = []
    if env.get("IMAP_MCP_AUTH_TOKENS", "").strip():
        environment_problems.append(
            f"IMAP_MCP_AUTH_TOKENS is set together with {ACCOUNTS_FILE_VARIABLE}: put each caller's token in "
            f"its account's {TOKENS_KEY} instead."
        )
    defaults = with_secret_files(env, environment_problems, warnings)
    problems = [f"environment: {p}" for p in environment_problems]
    accounts = []
    for name, table in tables.items():
        account, found = _account(name, table, defaults, warnings)
        problems.extend(f"[accounts.{name}] {p}" for p in found)
        if account is not None:
            accounts.append(account)
    problems.extend(_repeated_tokens(accounts))
    problems.extend(_repeated_subjects(accounts))
    problems.extend(_same_mailbox(accounts))
    misspelt = misspelt_settings(env)
    if problems:
        raise ConfigError("\n".join([*(f"{ACCOUNTS_FILE_VARIABLE} {path}: {p}" for p in problems), *misspelt]))
    warning = exposure_warning(path, ACCOUNTS_FILE_VARIABLE)
    return Accounts(tuple(accounts), path, tuple(([warning] if warning else []) + warnings + misspelt))


def load_accounts(env: Mapping[str, str]) -> Accounts:
    """The accounts of `IMAP_MCP_ACCOUNTS_FILE`, else the one account of the environment."""
    raw = env.get(ACCOUNTS_FILE_VARIABLE, "").strip()
    if raw:
        return load_from_file(Path(raw).expanduser(), env)
    problems: list[str] = []
    warnings: list[str] = []
    resolved = with_secret_files(env, problems, warnings)
    settings, _ = _every_problem(load_settings, {}, resolved, problems)
    policy, _ = _every_problem(load_policy, {}, resolved, problems)
    misspelt = misspelt_settings(env)
    if problems or settings is None or policy is None:
        raise ConfigError("\n".join(problems + misspelt))
    return Accounts((Account(ENVIRONMENT_ACCOUNT, settings, policy),), None, tuple(warnings + misspelt))


def stdio_account(accounts: Accounts, name: str | None) -> Account:
    """The account `--account NAME` names; without it, the only one there is."""
    if name is not None and accounts.source is None:
        raise ConfigError(f"--account {name!r} needs {ACCOUNTS_FILE_VARIABLE}: set it to the accounts file.")
    if name is not None:
        return accounts.named(name)
    if len(accounts.accounts) > 1:
        raise ConfigError(
            f"{accounts.source} holds several accounts: name one with --account ({', '.join(accounts.names())})."
        )
    return accounts.accounts[0]
