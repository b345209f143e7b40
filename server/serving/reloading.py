"""The accounts file, re-read without a restart: on SIGHUP, and when the file changes (`serve` and `watch`).

A new file is checked whole, as at start (`loading.load_accounts`, and whatever else the command
needs: `serve` wants a token for some account). A file with any problem changes nothing: the
accounts read before stay, and the log says why, one line per problem. The file is looked at
every `RELOAD_POLL` seconds (its modification time, size and inode, so an editor's or a
platform's replace-by-rename counts too); the secret files it names (`*_FILE`, `auth_tokens_file`)
are read again with it, but a change to them alone is noticed only on SIGHUP.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..accounts.loading import Accounts, load_accounts
from ..logs import get_logger
from ..setting_values import ConfigError

#: seconds between two looks at the accounts file
RELOAD_POLL = 2.0

Signature = tuple[int, int, int, int] | None


@dataclass(frozen=True)
class Changes:
    """What a reload changed, by account name."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def __str__(self) -> str:
        parts = [f"{what} {', '.join(names)}" for what, names in self._parts() if names]
        return "; ".join(parts) or "nothing changed"

    def _parts(self) -> list[tuple[str, tuple[str, ...]]]:
        return [("added", self.added), ("removed", self.removed), ("changed", self.changed)]


def changes(old: Accounts, new: Accounts) -> Changes:
    before = {a.name: a for a in old.accounts}
    after = {a.name: a for a in new.accounts}
    return Changes(
        added=tuple(name for name in after if name not in before),
        removed=tuple(name for name in before if name not in after),
        changed=tuple(name for name in after if name in before and before[name] != after[name]),
    )


def _signature(path: Path) -> Signature:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_mtime_ns, found.st_size, found.st_ino, found.st_dev)


class AccountsFile:
    """The accounts as last read well from `IMAP_MCP_ACCOUNTS_FILE`; `reload` reads it again.

    `check` adds what the command needs of a file beyond `load_accounts`; it raises `ConfigError` like it.
    """

    def __init__(
        self, env: Mapping[str, str], accounts: Accounts, check: Callable[[Accounts], None] = lambda _: None
    ) -> None:
        if accounts.source is None:
            raise ValueError("the accounts come from the environment alone: there is no file to re-read")
        self.env = env
        self.path = accounts.source
        self.accounts = accounts
        self._check = check
        self._seen = _signature(self.path)

    def changed(self) -> bool:
        """Whether the file looks different from when it was last read (or tried)."""
        return _signature(self.path) != self._seen

    def reload(self, why: str) -> Accounts | None:
        """The accounts of the file as it is now, or None (logged) when it has a problem and the old ones stay."""
        self._seen = _signature(self.path)
        try:
            accounts = load_accounts(self.env)
            self._check(accounts)
        except ConfigError as exc:
            log = get_logger()
            log.warning(
                "accounts file not reloaded (%s): it has problems, so the %d account(s) read before stay; fix it and "
                "save it again (or send SIGHUP):",
                why,
                len(self.accounts.accounts),
            )
            for line in str(exc).splitlines():
                log.warning("accounts file: %s", line)
            return None
        for warning in accounts.warnings:
            get_logger().warning("accounts file: %s", warning)
        found = changes(self.accounts, accounts)
        get_logger().info("accounts file reloaded (%s): %s; %d account(s)", why, found, len(accounts.accounts))
        self.accounts = accounts
        return accounts
