"""docs/asking.md's example dialogs are written at every docs build by the code that writes them for a person
(`docs/dialog_hooks.py`): a move of three messages, and a send to one recipient written to before and one new."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("dialog_hooks", ROOT / "docs" / "dialog_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_names_both_dialogs_and_the_build_writes_them() -> None:
    hooks = _hooks()
    page = (ROOT / "docs" / "asking.md").read_text()
    assert re.findall(r"^<!-- DIALOG: ([a-z-]+) -->$", page, re.M) == ["move-of-three", "send-to-known-and-new"]
    written = hooks.on_page_markdown(page, None, None, None)
    assert "<!-- DIALOG:" not in written
    move = written.split("```text\n", 1)[1].split("\n```", 1)[0]
    assert move.startswith('Move 3 messages from "INBOX" to "Archive"?')
    assert 'These are 3 of the 214 messages in "INBOX". What the IMAP server knows of them (times in UTC):' in move
    assert re.search(r"^- UID 4: arrived today \d\d:\d\d, 12 KB, read, flagged, 2 attachments$", move, re.M)
    assert re.search(r"^- UID 12: arrived 3 Nov \d{4}, 1\.8 MB, read, 1 attachment$", move, re.M)
    send = written.split("```text\n", 2)[2].split("\n```", 1)[0]
    assert "- bob@example.com: written to before" in send
    assert "- carol@partner.example: new (no message in Sent was ever addressed to it)" in send
    assert '- "q3-figures.pdf" (application/pdf, 8400 bytes) SHA-256 ' in send
    assert send.endswith("never written to before (or not checked): carol@partner.example.")


def test_a_dialog_the_hook_does_not_write_fails_the_build() -> None:
    with pytest.raises(ValueError, match="does not write"):
        _hooks().on_page_markdown("<!-- DIALOG: nothing-such -->", None, None, None)
