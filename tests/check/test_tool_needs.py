"""What each tool needs lives in one place, the registry (`ToolSpec.requires`): the check's tool lines,
get_server_info's `imap.tools` and the "what needs what" table of docs/using-tools.md all come from it."""

from __future__ import annotations

import re
from pathlib import Path

from check_output import SENDING

from imap_mcp.server.check.imap import CAPABILITIES, ROLES
from imap_mcp.server.check.readiness import proven
from imap_mcp.server.check.write_test import Proof
from imap_mcp.server.reading.new_messages import LISTED
from imap_mcp.server.tools.accounts import RELEVANT_CAPABILITIES
from imap_mcp.server.tools.needs import LISTED_KEYWORD, SETTINGS, Capability, RoleMailbox, ServerFacts, SettingOn
from imap_mcp.server.tools.registry import TOOLS, ToolSpec

USING_TOOLS = Path(__file__).resolve().parents[2] / "docs" / "using-tools.md"
EVERYTHING = ServerFacts(
    frozenset(name for capability in CAPABILITIES for name in capability.names),
    frozenset(ROLES),
    frozenset({b"\\*", b"\\Seen", b"\\Flagged", b"\\Answered"}),
    frozenset(SETTINGS),
)
NOTHING = ServerFacts(frozenset(), frozenset(), frozenset())


def _cell(text: str) -> str:
    """`text` for a Markdown table cell: flags such as `\\*` and `\\Deleted` in code, so the backslash shows."""
    return re.sub(r"(\\[\w*]+)", r"`\1`", text)


def _row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def _rows(spec: ToolSpec) -> list[str]:
    name = f"`{spec.name}`"
    rows = [_row(name, "every use", spec.needs, "not offered")] if spec.needs else []
    for need in spec.requires:
        without = f"**{need.without}**: {need.effect}"
        rows.append(_row(name, need.use or "every use", _cell(need.requirement.label), _cell(without)))
    return rows or [_row(name, "every use", "nothing", "works on every server")]


def needs_table() -> str:
    """The "what needs what" table, from the registry."""
    lines = ["| tool | use | needs | without it |", "|---|---|---|---|"]
    return "\n".join(lines + [row for spec in TOOLS for row in _rows(spec)]) + "\n"


def test_the_needs_table_is_the_registry() -> None:
    """Every tool of the registry, each of its needs, in docs/using-tools.md as the registry says them (a tool
    missing from the table, or a need changed in one place only, fails here; the message is the table to paste)."""
    assert needs_table() in USING_TOOLS.read_text(), (
        "docs/using-tools.md's 'What needs what' table should read:\n" + needs_table()
    )


def test_every_need_names_a_use_of_its_tool_and_every_use_is_judged() -> None:
    for spec in TOOLS:
        assert {need.use for need in spec.requires} - {None} <= set(spec.uses), spec.name
        judged = spec.readiness(EVERYTHING)
        assert [r.use for r in judged] == list(spec.uses or (None,)), spec.name


def test_every_setting_named_is_known_to_the_check() -> None:
    named = {spec.needs for spec in TOOLS if spec.needs} | {
        need.requirement.name for spec in TOOLS for need in spec.requires if isinstance(need.requirement, SettingOn)
    }
    assert named == set(SETTINGS)


def test_the_keyword_of_the_last_look_is_list_new_messages_own() -> None:
    assert LISTED_KEYWORD.encode() == LISTED


def test_get_server_info_describes_every_capability_the_tools_need() -> None:
    needed = {name for spec in TOOLS for need in spec.requires if isinstance(need.requirement, Capability)
              for name in need.requirement.names}  # fmt: skip
    assert set(RELEVANT_CAPABILITIES) == needed
    assert "move_messages (mode: move) refused without MOVE or UIDPLUS: nothing" in RELEVANT_CAPABILITIES["UIDPLUS"]


def test_with_everything_every_tool_works() -> None:
    assert {r.name: r.verdict for spec in TOOLS for r in spec.readiness(EVERYTHING)} == {
        r.name: "works" for spec in TOOLS for r in spec.readiness(EVERYTHING)
    }


def test_with_nothing_what_is_refused_degrades_or_is_off() -> None:
    verdicts = {r.name: r.verdict for spec in TOOLS for r in spec.readiness(NOTHING)}
    assert {name for name, verdict in verdicts.items() if verdict == "refused"} == {
        "list_new_messages",
        "set_message_flags (keywords)",
        "delete_messages (permanent: false)",
        "delete_messages (permanent: true)",
        "move_messages (mode: move)",
        "save_draft",
        "update_draft",
        "set_webhook_enabled",
        "set_webhook_outbox_limits",
    }
    assert {name for name, verdict in verdicts.items() if verdict == "degrades"} == {
        "list_mailboxes",
        "search_messages",
        "move_messages (mode: copy)",
        "set_message_flags (flags)",
    }
    assert {name for name, verdict in verdicts.items() if verdict == "off"} == set(SENDING)


def test_a_missing_role_refuses_only_the_uses_that_need_it() -> None:
    without_trash = ServerFacts(
        EVERYTHING.capabilities, frozenset({"sent", "drafts"}), EVERYTHING.kept_flags, frozenset(SETTINGS)
    )
    verdicts = {r.name: (r.verdict, r.detail) for spec in TOOLS for r in spec.readiness(without_trash)}
    assert verdicts["delete_messages (permanent: false)"] == (
        "refused",
        "without a Trash mailbox: create a Trash mailbox, or delete with permanent: true",
    )
    assert {name for name, (verdict, _) in verdicts.items() if verdict != "works"} == {
        "delete_messages (permanent: false)"
    }
    assert {
        need.requirement.role for spec in TOOLS for need in spec.requires if isinstance(need.requirement, RoleMailbox)
    } == set(ROLES)


def test_a_read_only_inbox_keeps_no_keyword_and_an_unsaid_permanentflags_keeps_every_one() -> None:
    def keywords(kept: frozenset[bytes] | None) -> str:
        facts = ServerFacts(EVERYTHING.capabilities, EVERYTHING.roles, kept, EVERYTHING.settings)
        return next(r.verdict for spec in TOOLS for r in spec.readiness(facts) if r.name == "list_new_messages")

    assert keywords(frozenset()) == "refused"
    assert keywords(None) == "works"
    assert keywords(frozenset({b"\\Seen", b"$IMAPMCPLISTED"})) == "works"  # named, in any case: only that one


def test_a_proof_of_something_else_leaves_a_refusal_and_a_broken_promise_fails() -> None:
    """The write test proves APPEND, not that a Sent mailbox exists: a use refused for that stays refused. A use
    the server announced and did not do (a keyword answered OK and not kept) fails."""
    without_sent = ServerFacts(
        EVERYTHING.capabilities, frozenset({"trash", "drafts"}), frozenset({b"\\*"}), frozenset(SETTINGS)
    )
    judged = {r.name: r for spec in TOOLS for r in spec.readiness(without_sent)}
    refused = judged["send_message (save_to_sent: true)"]
    assert proven(refused, Proof("ran", "APPEND with \\Draft \\Seen")).outcome == "refused"
    assert proven(refused, Proof("ran", "APPEND with \\Draft \\Seen")).detail == refused.detail
    keywords = proven(judged["set_message_flags (keywords)"], Proof("failed", "the keyword is not there"))
    assert (keywords.outcome, keywords.detail) == (
        "fails",
        "the write test found: the keyword is not there (announced: works)",
    )
