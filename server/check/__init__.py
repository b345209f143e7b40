"""`imap-mcp check`: try the configuration for real and say, one line per step, what works.

IMAP (DNS, TCP, TLS, greeting, LOGIN, capabilities, mailbox roles), then SMTP when SMTP_HOST is
set (DNS, TCP, TLS, greeting, AUTH; nothing is sent). `serve` prints `summary()` of the same
steps as one line at start.
"""

from __future__ import annotations

from ..config import Settings
from .imap import check_imap
from .smtp import check_smtp
from .steps import Step

__all__ = ["Step", "ready", "run_check", "summary"]


def run_check(settings: Settings) -> list[Step]:
    steps = check_imap(settings.imap)
    if settings.smtp is not None:
        steps += check_smtp(settings.smtp)
    return steps


def ready(steps: list[Step]) -> bool:
    """True when no step failed: the server can do its job (warnings say what it will do without)."""
    return all(step.outcome != "fail" for step in steps)


def summary(settings: Settings, steps: list[Step]) -> str:
    """The steps as one line: ready, or the failure; warnings by name."""
    failed = next((step for step in steps if step.outcome == "fail"), None)
    if failed is not None:
        return (
            f"check: {failed.name} failed: {failed.detail} Serving anyway: the tools report this until it is "
            "fixed; `imap-mcp check` shows every step."
        )
    warned = [step.name for step in steps if step.outcome == "warn"]
    sending = ", SMTP ok" if settings.smtp is not None else ", sending off (SMTP_HOST is not set)"
    line = f"check: IMAP ok for {settings.imap.account} ({settings.imap.tls} TLS){sending}"
    return line + (f"; see `imap-mcp check` about: {', '.join(warned)}" if warned else "")
