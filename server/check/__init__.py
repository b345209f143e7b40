"""`imap-mcp check`: try the configuration for real and say, one line per step, what works.

IMAP (DNS, TCP, TLS, greeting, login, capabilities, mailbox roles, the flags INBOX keeps), with
`--write-test` the write test in scratch mailboxes (`write_test`), then SMTP when SMTP_HOST is set
(DNS, TCP, TLS, greeting, AUTH; nothing is sent), then a line per use of every tool: works,
degrades, refused (and why), or off. Every step has its line, always and in order: after a failed
one the rest say "not tried". `serve` prints `summary()` of the same steps as one line at start.
"""

from __future__ import annotations

from ..config import Settings
from .imap import check_imap, imap_steps
from .readiness import tool_lines
from .smtp import check_smtp, smtp_steps
from .steps import Step
from .write_test import STEPS as WRITE_STEPS
from .write_test import Proof, write_test

__all__ = ["Step", "degraded", "ready", "run_check", "summary"]


def run_check(settings: Settings, write_test_too: bool = False) -> list[Step]:
    """Every step's line, in order, then every tool's."""
    imap = imap_steps(settings.imap, WRITE_STEPS if write_test_too else ())
    facts = check_imap(settings.imap, imap)
    proofs: dict[str, Proof] = {}
    if facts is not None and write_test_too:
        written, proofs = write_test(settings.imap, facts)
        for step in written:
            imap.add(step)
    lines = imap.lines()
    smtp_failed = None
    if settings.smtp is not None:
        smtp = smtp_steps(settings.smtp)
        check_smtp(settings.smtp, smtp)
        lines += smtp.lines()
        lines += [Step("send policy", "ok", line) for line in settings.send_policy.lines()]
        smtp_failed = smtp.failed
    return lines + tool_lines(settings, facts, imap.failed, smtp_failed, proofs)


def ready(steps: list[Step]) -> bool:
    """True when no step failed: the server can do its job (warnings say what it will do without)."""
    return all(step.outcome != "fail" for step in steps)


def degraded(steps: list[Step]) -> list[str]:
    """The tool uses the write test proved to fail on this server though it announced what they need (a MOVE
    answered NO, a Trash that opens read-only): the verdict is then "degraded", never "ready"."""
    return [step.name for step in steps if step.outcome == "fails"]


def summary(settings: Settings, steps: list[Step]) -> str:
    """The steps as one line: ready, or the failure; warnings and tools refused here by name."""
    failed = next((step for step in steps if step.outcome == "fail"), None)
    if failed is not None:
        return (
            f"check: {failed.name} failed: {failed.detail} Serving anyway: the tools report this until it is "
            "fixed; `imap-mcp check` shows every step."
        )
    warned = [step.name for step in steps if step.outcome == "warn"]
    refused = [step.name for step in steps if step.outcome == "refused"]
    sending = ", SMTP ok" if settings.smtp is not None else ", sending off (SMTP_HOST is not set)"
    line = f"check: IMAP ok for {settings.imap.account} ({settings.imap.tls} TLS){sending}"
    if warned:
        line += f"; see `imap-mcp check` about: {', '.join(warned)}"
    if refused:
        line += f"; refused on this server: {', '.join(refused)}"
    return line
