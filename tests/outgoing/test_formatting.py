"""The body of an outgoing message as built before anyone is asked: the sanitizer, the text alternative, the signature
and its settings (environment and accounts file), and a reply's quote and its bounds."""

from __future__ import annotations

from pathlib import Path

import pytest

from imap_mcp.server.accounts.loading import load_accounts
from imap_mcp.server.config import load_settings
from imap_mcp.server.outgoing.formatting import clean_html, compose_body
from imap_mcp.server.outgoing.quoting import CUT_MARKER, MAX_QUOTED_LINES, attribution, reply_quote
from imap_mcp.server.setting_values import ConfigError

IMAP = {"IMAP_HOST": "imap.example.com", "IMAP_USERNAME": "alice@example.com", "IMAP_PASSWORD": "imap-secret-9"}
SMTP = {**IMAP, "SMTP_HOST": "smtp.example.com"}


@pytest.mark.parametrize(
    "dangerous",
    [
        "<script>steal()</script>",
        '<img src="https://tracker.example/p.png">',
        '<p style="background:url(https://tracker.example/bg.png)">x</p>',
        '<link rel="stylesheet" href="https://tracker.example/x.css">',
        "<style>@import url(https://tracker.example/x.css)</style>",
        '<p onmouseover="steal()">x</p>',
        '<a href="javascript:steal()">x</a>',
        '<iframe src="https://tracker.example/"></iframe>',
        '<svg><image href="https://tracker.example/p.png"/></svg>',
    ],
)
def test_the_sanitizer_leaves_nothing_that_runs_or_loads(dangerous: str) -> None:
    cleaned = clean_html(dangerous)
    for word in ("tracker.example", "steal", "javascript", "<script", "<img", "<style", "<link", "style="):
        assert word not in cleaned


def test_a_plain_body_without_signature_or_quote_is_sent_as_written() -> None:
    body = compose_body("  exactly this, no newline", "text")
    assert (body.text, body.html) == ("  exactly this, no newline", None)


def test_markdown_becomes_html_with_a_text_alternative_made_from_it_and_the_signature_in_both() -> None:
    body = compose_body("# Plan\n\n- one\n- [two](https://example.com)\n", "markdown", "Alice\n<ACME>")
    assert body.html is not None
    assert (
        "<h1>Plan</h1>" in body.html and '<a href="https://example.com" rel="noopener noreferrer">two</a>' in body.html
    )
    assert '<div class="signature">-- <br>\nAlice<br>\n&lt;ACME&gt;</div>' in body.html
    assert body.text.endswith("\n\n-- \nAlice\n<ACME>\n") and "two <https://example.com>" in body.text
    assert body.layout.format == "markdown" and body.layout.signature_chars == len("Alice\n<ACME>")
    assert "<" not in "\n".join(body.layout.describe())


def test_a_quote_is_bounded_and_says_it_was_cut() -> None:
    quoted = reply_quote("Mon, 2 Mar 2026 10:00:00 +0000", '"Zoe Q." <zoe@example.com>', "line\n" * 500)
    lines = quoted.text.splitlines()
    assert lines[0] == "On Mon, 2 Mar 2026 10:00:00 +0000, Zoe Q. wrote:"
    assert lines[1:3] == ["> line", "> line"] and lines[-1] == f"> {CUT_MARKER}"
    assert len(lines) == 1 + MAX_QUOTED_LINES + 1 and quoted.cut
    assert '<blockquote type="cite">line<br>' in quoted.html


def test_a_quote_of_a_short_text_is_whole_and_its_html_escaped() -> None:
    quoted = reply_quote("", "bob@example.net", "<b>hi</b>\n\n> older\n")
    assert quoted.text == "bob@example.net wrote:\n> <b>hi</b>\n>\n> > older" and not quoted.cut
    assert "&lt;b&gt;hi&lt;/b&gt;<br>\n<br>\n&gt; older" in quoted.html


def test_the_attribution_is_one_line_whatever_the_sender_wrote() -> None:
    assert attribution("Mon,\r\n 2 Mar", "=?utf-8?q?x?= <a@b.c>\u2028Bcc: evil").count("\n") == 0


def test_the_signature_comes_from_the_setting_or_its_file(tmp_path: Path) -> None:
    smtp = load_settings({**SMTP, "SMTP_SIGNATURE": "-- \nAlice\n"}).smtp
    assert smtp is not None and smtp.signature == "Alice"
    path = tmp_path / "signature.txt"
    path.write_text("Alice\r\nACME\r\n\r\n", encoding="utf-8")
    smtp = load_settings({**SMTP, "SMTP_SIGNATURE_FILE": str(path)}).smtp
    assert smtp is not None and smtp.signature == "Alice\nACME"
    smtp = load_settings(SMTP).smtp
    assert smtp is not None and smtp.signature is None


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        ({"SMTP_SIGNATURE": "a", "SMTP_SIGNATURE_FILE": "/x"}, "both set"),
        ({"SMTP_SIGNATURE_FILE": "/nonexistent/signature.txt"}, "cannot be read"),
        ({"SMTP_SIGNATURE": "x" * 10_001}, "over 10000 characters"),
    ],
)
def test_a_bad_signature_setting_is_refused_with_what_to_do(extra: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigError, match=said):
        load_settings({**SMTP, **extra})


def test_each_account_of_the_accounts_file_has_its_own_signature(tmp_path: Path) -> None:
    signature = tmp_path / "bob.sig"
    signature.write_text("Bob\n")
    path = tmp_path / "accounts.toml"
    path.write_text(
        '[accounts.alice]\nauth_tokens = ["alice-token-0123456789abcdef"]\nIMAP_USERNAME = "alice@example.com"\n'
        'SMTP_SIGNATURE = "Alice"\n\n'
        '[accounts.bob]\nauth_tokens = ["bob-token-0123456789abcdef"]\nIMAP_USERNAME = "bob@example.com"\n'
        f'SMTP_SIGNATURE_FILE = "{signature}"\n'
    )
    path.chmod(0o600)
    alice, bob = load_accounts({**SMTP, "IMAP_MCP_ACCOUNTS_FILE": str(path)}).accounts
    assert alice.settings.smtp is not None and alice.settings.smtp.signature == "Alice"
    assert bob.settings.smtp is not None and bob.settings.smtp.signature == "Bob"


def test_the_approval_is_bound_to_the_html_part_too() -> None:
    from email.headerregistry import Address

    from imap_mcp.server.outgoing.approval import content_digest
    from imap_mcp.server.outgoing.compose import Draft, Recipients

    draft = Draft(Address(addr_spec="a@example.com"), Recipients(to=(Address(addr_spec="b@example.com"),)), "S", "")
    one, other = (draft.with_body(compose_body(html, "html")) for html in ("<p>hi</p>", "<div>hi</div>"))
    assert one.body == other.body and one.html != other.html
    assert content_digest(one) != content_digest(other)
    assert content_digest(draft) == content_digest(draft.with_body(compose_body("", "text")))
