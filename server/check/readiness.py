"""The tool lines of `imap-mcp check`: each use of each tool on this server, from what the steps found.

What a tool needs is the registry's (`ToolSpec.requires`); this module only gathers the facts (the
steps' capabilities, roles and kept flags, and the settings) and, after `--write-test`, puts what
the write test proved next to what the server announced: where they disagree, the proof wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..config import Settings
from ..tools.needs import Readiness, ServerFacts, Verdict, settings_on
from ..tools.registry import TOOLS
from .steps import Step
from .write_test import Proof

#: the width of a tool line's name: the longest name of a tool use (`reply_to_message (save_to_sent: false)`)
COLUMN = max(len(r.name) for spec in TOOLS for r in spec.readiness(ServerFacts(frozenset(), frozenset(), None)))
#: the tools that send mail: their lines wait for the SMTP steps
SENDING = {spec.name for spec in TOOLS if spec.needs == "SMTP_HOST"}


def tool_lines(
    settings: Settings,
    facts: ServerFacts | None,
    failed: Step | None,
    smtp_failed: Step | None,
    proofs: Mapping[str, Proof],
) -> list[Step]:
    """A line per use of every tool; one "not tried" line when an IMAP step failed (nothing is known)."""
    if facts is None:
        why = f"not tried: {failed.name} failed" if failed else "not tried"
        return [Step("tools", "skip", f"{why}; which tools work here is known once the IMAP steps pass")]
    lines: list[Step] = []
    for spec in TOOLS:
        for readiness in spec.readiness(replace(facts, settings=settings_on(settings))):
            if smtp_failed is not None and spec.name in SENDING:
                lines.append(Step(readiness.name, "skip", f"not tried: {smtp_failed.name} failed", COLUMN))
            else:
                lines.append(proven(readiness, proofs.get(readiness.name)))
    return lines


def proven(readiness: Readiness, proof: Proof | None) -> Step:
    """The line of one tool use: what the server announced, and what the write test proved of it. A use refused
    for what the test does not try (a missing Sent mailbox, where the test proved APPEND) stays refused."""
    announced = Step(readiness.name, readiness.verdict, readiness.detail, COLUMN)
    if proof is None or readiness.verdict == "off":
        return announced
    if readiness.verdict == "refused":
        if proof.outcome != "refused":
            return announced
        return Step(readiness.name, "refused", _joined(readiness.detail, "proven: refused as announced"), COLUMN)
    if proof.outcome == "ran":
        return Step(readiness.name, readiness.verdict, _joined(readiness.detail, f"proven: {proof.detail}"), COLUMN)
    verdict: Verdict = "fails" if proof.outcome == "failed" else "refused"
    detail = f"the write test found: {proof.detail} (announced: {readiness.verdict})"
    return Step(readiness.name, verdict, detail, COLUMN)


def _joined(first: str, second: str) -> str:
    return f"{first}; {second}" if first else second
