"""One connection pool per account, each bounded, all together bounded by `IMAP_MCP_MAX_CONNECTIONS`.

An account whose server is slow or silent can hold at most its own `PER_ACCOUNT` connections
(and worker threads; callers waiting for one of them wait without a thread), so the other
accounts keep theirs. Every pool closes the connections idle for `idle_seconds` (the pool's
reaper), so an account nobody uses holds no connection.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from ..config import ImapSettings
from ..imap.pool import ImapPool
from ..setting_values import ConfigError

MAX_CONNECTIONS_VARIABLE = "IMAP_MCP_MAX_CONNECTIONS"
DEFAULT_MAX_CONNECTIONS = 32
#: connections (and worker threads) one account may use at once
PER_ACCOUNT = 4


def load_max_connections(env: Mapping[str, str]) -> int:
    raw = env.get(MAX_CONNECTIONS_VARIABLE, "").strip()
    if not raw:
        return DEFAULT_MAX_CONNECTIONS
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(
            f"{MAX_CONNECTIONS_VARIABLE}={raw!r} is not valid: use the number of IMAP connections all accounts "
            "together may hold, at least 1."
        )
    return int(raw)


class AccountPools:
    """Makes the pools of the accounts of one server, sharing one bound on their connections."""

    def __init__(self, max_connections: int = DEFAULT_MAX_CONNECTIONS, idle_seconds: float = 120.0) -> None:
        self.max_connections = max_connections
        self._shared = threading.BoundedSemaphore(max_connections)
        self._idle_seconds = idle_seconds

    def pool_for(self, settings: ImapSettings) -> ImapPool:
        return ImapPool(
            settings,
            max_size=min(PER_ACCOUNT, self.max_connections),
            idle_seconds=self._idle_seconds,
            shared_slots=self._shared,
        )
