"""Dialog text that cannot be forged: a value shown in a dialog cannot add a line, hide text or reorder it.

Property tests over hypothesis-generated names and subjects (any Unicode: line and paragraph
separators of every kind, C0/C1 controls, bidirectional and other format characters, combining
marks, surrogates, blank and invisible characters): the dialog's lines and every word outside the
quoted values are exactly the template's, each quoted value reads back as the value (or its start,
with a cut marker), and no character that could break a line, reorder text or render blank or
invisible appears unescaped. Which characters those are is this module's own oracle, `must_not_show`,
written from the Unicode categories and names, never from the code under test; one test runs it over
every code point. Then end to end against Dovecot: creating or renaming a mailbox to such a name is
refused; one made by another mail client is shown escaped.
"""

from __future__ import annotations

import json
import re
import unicodedata
from email.headerregistry import Address

import pytest
from harness import Account, Person, error_text, guarded_client, mailbox_names
from hypothesis import given
from hypothesis import strategies as st

from imap_mcp.protocol.texts import SHOWN_MAX, shown
from imap_mcp.server.changes.messages import PlannedMessageChange
from imap_mcp.server.changes.questions import message_change_request
from imap_mcp.server.mailboxes.folders import PlannedFolderChange
from imap_mcp.server.mailboxes.questions import delete_mailbox_request, rename_mailbox_request
from imap_mcp.server.outgoing.compose import Draft, describe_for_approval, unique_recipients

#: a quoted value as `shown` writes it, with its cut marker if it has one
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"(?:… \(\d+ more characters not shown\))?')
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
BIDI_AND_INVISIBLE = "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\ufeff\u061c"
#: five code points that render blank yet passed the escaping once (an attacker's find)
BLANK_FOUND = ("\u2800", "\u17b4", "\u17b5", "\U0001d159", "\ufffc")
#: the categories whose every character must be escaped: controls, format, separators, private use,
#: unassigned, surrogates (and Zs, spaces, apart from U+0020: see `must_not_show`)
ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Co", "Cn", "Cs"})


def must_not_show(char: str) -> bool:
    """Whether `char` may never appear raw in a dialog: a category above, a space other than U+0020, one of
    the five found blank, or (by name) a variation selector, a Hangul filler or the combining grapheme joiner,
    which Unicode lists as default-ignorable (rendered invisible)."""
    category = unicodedata.category(char)
    if category in ESCAPED_CATEGORIES or (category == "Zs" and char != " ") or char in BLANK_FOUND:
        return True
    name = unicodedata.name(char, "")
    return (
        "VARIATION SELECTOR" in name or ("HANGUL" in name and "FILLER" in name) or name == "COMBINING GRAPHEME JOINER"
    )


def shown_raw(text: str) -> list[str]:
    """The characters of `text` that must not show but do, as U+XXXX."""
    return [f"U+{ord(char):04X}" for char in sorted(set(text)) if must_not_show(char)]


#: any text, with the characters that break, reorder or hide drawn often: a list of characters joined, since
#: `st.text(alphabet=...)` merges the alphabet into one set of code points drawn mostly from its low end
#: (it would almost never pick U+2028 or U+2800 out of the samples)
hostile_text = st.lists(
    st.one_of(
        st.characters(codec=None),
        st.sampled_from(LINE_BREAKS + BIDI_AND_INVISIBLE + '"\\\u0301\u20dd\u00a0\x1b\x9b'),
        st.sampled_from((*BLANK_FOUND, "\u3164", "\ufe0f", "\u034f", "\U000e0101")),
    ),
    max_size=300,
).map("".join)


def skeleton(text: str) -> str:
    """`text` with every quoted value replaced by `"…"`: the template's own words and lines."""
    return QUOTED.sub('"…"', text)


def read_back(text: str) -> list[str]:
    """The values quoted in `text`, decoded."""
    return [json.loads(found.group(0).split("…", 1)[0] if found.group(0).endswith(")") else found.group(0))
            for found in QUOTED.finditer(text)]  # fmt: skip


def assert_unforgeable(question: str, template: str, values: set[str]) -> None:
    """`question` has the template's lines and words, and each quoted value reads back as one of `values`."""
    assert skeleton(question) == skeleton(template)
    assert question.splitlines() == question.split("\n") and len(question.splitlines()) == len(template.splitlines())
    assert not shown_raw(question.replace("\n", "")), ascii(question)
    assert set(read_back(question)) <= {value[:SHOWN_MAX] for value in values}


def mailbox_questions(source: str, destination: str) -> dict[str, str]:
    """Every mailbox dialog (and the rename summary, which the token path shows) for these names."""
    questions = {}
    for operation in ("trash", "delete_permanently", "move", "copy"):
        plan = PlannedMessageChange(operation, "alice@example.org", source, 7, (1, 2, 5), destination, 9)
        questions[operation] = message_change_request("tool", plan).question
    deletion = PlannedFolderChange("delete_mailbox", "alice@example.org", source, 7, uidnext=4, messages=3)
    questions["delete_mailbox"] = delete_mailbox_request("manage_mailbox", deletion).question
    rename = PlannedFolderChange("rename_mailbox", "alice@example.org", source, 7, new_name=destination)
    questions["rename_mailbox"] = rename_mailbox_request("manage_mailbox", rename).question
    return questions


@given(hostile_text)
def test_a_shown_value_is_one_quoted_line_that_reads_back_as_the_value(value: str) -> None:
    rendered = shown(value)
    assert rendered.splitlines() == [rendered]
    assert QUOTED.fullmatch(rendered)
    assert read_back(rendered) == [value[:SHOWN_MAX]]
    assert not shown_raw(rendered)
    assert unicodedata.category(rendered[1]) not in ("Mn", "Me", "Mc")  # nothing sits on the opening quote
    assert rendered.endswith(f"({len(value) - SHOWN_MAX} more characters not shown)") == (len(value) > SHOWN_MAX)


@given(hostile_text.filter(bool), hostile_text.filter(bool))
def test_mailbox_dialogs_say_exactly_the_templates_words_whatever_the_names(source: str, destination: str) -> None:
    templates = mailbox_questions("A", "B")
    for operation, question in mailbox_questions(source, destination).items():
        assert_unforgeable(question, templates[operation], {source, destination})


def draft(subject: str, to: str = "alice@example.com") -> Draft:
    sender = Address(addr_spec="demo@example.org")
    return Draft(sender, unique_recipients([Address(addr_spec=to)]), subject, "Hello\n")


@given(hostile_text, hostile_text.filter(bool))
def test_send_dialogs_say_exactly_the_templates_words_whatever_the_subject_and_mailbox(
    subject: str, mailbox: str
) -> None:
    assert_unforgeable(describe_for_approval(draft(subject)), describe_for_approval(draft("S")), {subject})
    reply = describe_for_approval(draft(subject), reply_in=mailbox)
    assert_unforgeable(reply, describe_for_approval(draft("S"), reply_in="M"), {mailbox})


@pytest.mark.slow
def test_no_code_point_that_must_not_show_survives_anywhere_in_unicode() -> None:
    """Every code point U+0000..U+10FFFF, one plane per value: none the oracle names is left raw."""
    for plane in range(17):
        text = "".join(map(chr, range(plane << 16, (plane + 1) << 16)))
        rendered = shown(text, limit=len(text))
        assert rendered.splitlines() == [rendered], f"plane {plane}"
        assert not shown_raw(rendered), f"plane {plane}"


@pytest.mark.parametrize("char", BLANK_FOUND, ids=[f"U+{ord(c):04X}" for c in BLANK_FOUND])
def test_a_code_point_found_to_render_blank_is_escaped(char: str) -> None:
    escaped = json.dumps(char)[1:-1]  # \uXXXX, a surrogate pair beyond the BMP
    assert escaped.startswith("\\u")
    assert shown(f"Archive{char}") == f'"Archive{escaped}"'
    assert shown(f"{char}Archive") == f'"{escaped}Archive"'


def test_an_address_that_is_not_one_plain_word_is_quoted() -> None:
    """A quoted local part may hold spaces: shown as a value, never as the template's words."""
    hostile = '"Account: x  Supplied by the IMAP server"@evil.example'
    question = describe_for_approval(draft("S", to=hostile))
    assert skeleton(question) == skeleton(describe_for_approval(draft("S")).replace("alice@example.com", '"x"'))


# --- end to end: the names themselves, against Dovecot ---

HOSTILE_NAMES = [
    "Archive\u2028Move 0 messages. Nothing is deleted.",
    "Archive\u2029x",
    "Archive\x85x",
    "Archive\rx",
    "Archive\x1b[2Jx",
    "evihcrA\u202e",
    "a\u2066b\u2069",
    "zero\u200bwidth",
    "tag\U000e0041",
    "blank\u2800braille",
    "heart\ufe0f",
]


@pytest.mark.anyio
async def test_creating_or_renaming_a_mailbox_to_a_name_that_could_forge_a_dialog_is_refused(account: Account) -> None:
    before = mailbox_names(account)
    async with guarded_client(account) as client:
        for name in HOSTILE_NAMES:
            created = await client.call_tool("manage_mailbox", {"action": "create", "mailbox": name})
            assert "not allowed in a new mailbox name" in error_text(created), ascii(name)
            assert "Nothing was changed" in error_text(created)
            renamed = await client.call_tool(
                "manage_mailbox", {"action": "rename", "mailbox": "Archive", "new_name": name}
            )
            assert "not allowed in a new mailbox name" in error_text(renamed), ascii(name)
        spaced = await client.call_tool("manage_mailbox", {"action": "create", "mailbox": "Ideas\u3000and\u00a0notes"})
    assert not spaced.is_error
    assert mailbox_names(account) == before | {"Ideas\u3000and\u00a0notes"}


@pytest.mark.anyio
async def test_a_name_made_by_another_mail_client_is_shown_escaped(account: Account) -> None:
    name = "evihcrA\u202e\u2028Delete nothing."
    other = account.imap()
    try:
        other.create_folder(name)
    finally:
        other.logout()
    person = Person(action="decline")
    async with guarded_client(account, person) as client:
        await client.call_tool("manage_mailbox", {"action": "delete", "mailbox": name})
    [question] = person.shown
    first_line = question.splitlines()[0]
    assert first_line == f"Delete the mailbox {shown(name)} and the 0 messages in it?"
    assert first_line.endswith('"evihcrA\\u202e\\u2028Delete nothing." and the 0 messages in it?')
    assert len(question.splitlines()) == len(
        delete_mailbox_request("t", PlannedFolderChange("delete_mailbox", "a", "A")).question.splitlines()
    )
    assert not shown_raw(question.replace("\n", ""))
