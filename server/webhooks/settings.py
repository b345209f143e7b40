"""The operator's webhook settings: on or off, the store, its keys, outbox defaults and ceilings, retry interval."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..setting_values import ConfigError, Secret, flag, key_list

HOUR = 3600
DAY = 24 * HOUR
#: the smallest limits an account may set: 1 hour, 1 event
MIN_RETENTION_SECONDS = HOUR
MIN_MAX_EVENTS = 1
#: failures in a row after which delivery pauses
FAILURE_THRESHOLD = 10

#: the most characters a count or a duration may be written with; a longer text is refused unread
NUMBER_TEXT_MAX = 20
#: ASCII digits only: `\d` and `str.isdigit` also take other scripts' digits (`int` reads U+0661 U+0660 as 10),
#: and `str.isdigit` superscripts, which `int` then refuses
_COUNT = re.compile(r"[0-9]+")
_DURATION = re.compile(r"([0-9]+)([smhd]?)")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": HOUR, "d": DAY}


def parse_count(text: str) -> int:
    """A whole number written in ASCII digits, at most `NUMBER_TEXT_MAX` of them, nothing else (no sign, no
    space); ValueError naming the accepted form."""
    if len(text) > NUMBER_TEXT_MAX or not _COUNT.fullmatch(text):
        raise ValueError(f"use a whole number in ASCII digits 0-9, at most {NUMBER_TEXT_MAX} of them")
    return int(text)


def parse_duration(text: str) -> int:
    """Seconds from `3600`, `90m`, `36h` or `30d`: ASCII digits and at most one lower-case unit, nothing else,
    at most `NUMBER_TEXT_MAX` characters; ValueError naming the accepted forms."""
    match = _DURATION.fullmatch(text) if len(text) <= NUMBER_TEXT_MAX else None
    if match is None:
        raise ValueError(
            "use whole seconds or a number with s, m, h or d (e.g. 36h, 30d, 90m), in ASCII digits 0-9, at most "
            f"{NUMBER_TEXT_MAX} characters"
        )
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def default_store_url(env: Mapping[str, str]) -> str:
    """SQLite under the user's state directory ($XDG_STATE_HOME, else ~/.local/state)."""
    state = env.get("XDG_STATE_HOME", "").strip() or str(Path.home() / ".local" / "state")
    return f"sqlite:///{Path(state) / 'imap-mcp' / 'store.sqlite3'}"


@dataclass(frozen=True)
class WebhookSettings:
    #: IMAP_MCP_WEBHOOKS: false = the webhook tools only read (status `unavailable`), nothing is delivered
    enabled: bool = True
    #: IMAP_MCP_STORE: sqlite:///path or postgresql://...
    store_url: str = field(default_factory=lambda: default_store_url(os.environ))
    #: IMAP_MCP_STORE_KEYS: the first encrypts, every one decrypts; empty = nothing can be saved or read
    store_keys: tuple[Secret, ...] = field(default=(), repr=False)
    #: IMAP_MCP_WEBHOOK_RETENTION / _CEILING: how long events are kept (seconds)
    retention_default: int = 7 * DAY
    retention_ceiling: int = 30 * DAY
    #: IMAP_MCP_WEBHOOK_MAX_EVENTS / _CEILING: how many events are kept
    max_events_default: int = 1000
    max_events_ceiling: int = 10000
    #: IMAP_MCP_WEBHOOK_RETRY_INTERVAL: seconds between attempts while paused, the longest backoff before
    retry_interval: int = 300


def _duration_setting(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return parse_duration(raw.lower())
    except ValueError as exc:
        raise ConfigError(f"{name}={raw[: NUMBER_TEXT_MAX + 1]!r} is not valid: {exc}.") from None


def _count_setting(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        count = parse_count(raw)
    except ValueError:
        count = 0  # refused below, in the same words as a zero
    if count < 1:
        raise ConfigError(
            f"{name}={raw[: NUMBER_TEXT_MAX + 1]!r} is not valid: use a whole number of at least 1 in ASCII digits 0-9."
        )
    return count


def _within(name: str, value: int, low: int, ceiling_name: str, ceiling: int) -> None:
    if not low <= value <= ceiling:
        raise ConfigError(f"{name}={value} is not valid: use a value from {low} to {ceiling_name} ({ceiling}).")


def load_webhook_settings(env: Mapping[str, str]) -> WebhookSettings:
    retention_ceiling = _duration_setting(env, "IMAP_MCP_WEBHOOK_RETENTION_CEILING", WebhookSettings.retention_ceiling)
    retention = _duration_setting(
        env, "IMAP_MCP_WEBHOOK_RETENTION", min(WebhookSettings.retention_default, retention_ceiling)
    )
    events_ceiling = _count_setting(env, "IMAP_MCP_WEBHOOK_MAX_EVENTS_CEILING", WebhookSettings.max_events_ceiling)
    events = _count_setting(env, "IMAP_MCP_WEBHOOK_MAX_EVENTS", min(WebhookSettings.max_events_default, events_ceiling))
    if retention_ceiling < MIN_RETENTION_SECONDS:
        raise ConfigError(
            f"IMAP_MCP_WEBHOOK_RETENTION_CEILING={retention_ceiling} is not valid: use at least 1h ({HOUR} seconds)."
        )
    _within(
        "IMAP_MCP_WEBHOOK_RETENTION",
        retention,
        MIN_RETENTION_SECONDS,
        "IMAP_MCP_WEBHOOK_RETENTION_CEILING",
        retention_ceiling,
    )
    _within(
        "IMAP_MCP_WEBHOOK_MAX_EVENTS", events, MIN_MAX_EVENTS, "IMAP_MCP_WEBHOOK_MAX_EVENTS_CEILING", events_ceiling
    )
    return WebhookSettings(
        enabled=flag(env, "IMAP_MCP_WEBHOOKS", True),
        store_url=_store_url(env),
        store_keys=key_list(env, "IMAP_MCP_STORE_KEYS"),
        retention_default=retention,
        retention_ceiling=retention_ceiling,
        max_events_default=events,
        max_events_ceiling=events_ceiling,
        retry_interval=_retry_interval(env),
    )


def _store_url(env: Mapping[str, str]) -> str:
    raw = env.get("IMAP_MCP_STORE", "").strip()
    if not raw:
        return default_store_url(env)
    if not raw.startswith(("sqlite:///", "postgresql://", "postgres://")):
        raise ConfigError(
            f"IMAP_MCP_STORE={raw.split('://')[0]!r}... is not valid: use sqlite:///path/to/store.sqlite3 or "
            "postgresql://user@host/database."
        )
    return raw


def _retry_interval(env: Mapping[str, str]) -> int:
    seconds = _duration_setting(env, "IMAP_MCP_WEBHOOK_RETRY_INTERVAL", WebhookSettings.retry_interval)
    if seconds < 1:
        raise ConfigError("IMAP_MCP_WEBHOOK_RETRY_INTERVAL=0 is not valid: use at least 1 second (default 300).")
    return seconds
