"""What every way of starting the server does first: read the settings, or stop with one line; announce."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from ..setting_values import ConfigError

if TYPE_CHECKING:
    from ..accounts.loading import Account, Accounts
    from ..imap.pool import ImapPool

T = TypeVar("T")


def load_or_exit(loader: Callable[[Mapping[str, str]], T], env: Mapping[str, str]) -> T:
    """`loader(env)`, or one `imap-mcp: …` line on stderr and the setting's exit code (no traceback)."""
    try:
        return loader(env)
    except ConfigError as exc:
        for line in str(exc).splitlines():
            print(f"imap-mcp: {line}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None


def _account_line(account: Account) -> str:
    imap, policy = account.settings.imap, account.policy
    notes = [f"{imap.tls} TLS"]
    if policy.read_only:
        notes.append("read-only")
    if policy.allowed is not None:
        notes.append("tools: " + ",".join(sorted(policy.allowed)))
    if policy.disabled:
        notes.append("disabled: " + ",".join(sorted(policy.disabled)))
    if not account.settings.elicitation:
        notes.append("ELICITATION=false")
    return f"account {account.name}: {imap.username} on {imap.host}:{imap.port} ({'; '.join(notes)})"


def announce(accounts: Accounts, http: bool) -> None:
    """The start lines: warnings, then how the server asks (once each), then one line per account of a file.

    The random-seal-key warning only over HTTP (see `guard.start_lines`).
    """
    from ..guard import ELICITATION_OFF_LINE, start_lines  # here: `check` and `--version` need no SDK

    first = accounts.accounts[0].settings
    if accounts.source is None:
        lines = [*accounts.warnings, *start_lines(first, http)]
    else:  # the seal keys are the whole server's; ELICITATION is noted per account
        lines = [*accounts.warnings, *(line for line in start_lines(first, http) if line != ELICITATION_OFF_LINE)]
        lines.extend(_account_line(a) for a in accounts.accounts)
    for line in lines:
        print(f"imap-mcp: {line}", file=sys.stderr)


def check_login_in_background(pool: ImapPool) -> threading.Thread:
    """Log in once at start, in a thread of its own, so that stdio never waits on the network: a login that fails
    is one `imap-mcp: …` line on stderr at once (never the password), not a surprise at the first tool call; one
    that works leaves its connection in `pool` for the first tool. Returns the thread (tests join it)."""
    from ..errors import ImapMcpError

    def attempt() -> None:
        try:
            pool.run_sync(lambda _session: None)
        except ImapMcpError as exc:
            reason = " ".join(str(exc).split())
            print(
                f"imap-mcp: the login at start failed: {reason} Serving anyway: every tool reports this until it is "
                "fixed; `imap-mcp check` shows every step.",
                file=sys.stderr,
                flush=True,
            )

    thread = threading.Thread(target=attempt, name="imap-mcp-login-check", daemon=True)
    thread.start()
    return thread
