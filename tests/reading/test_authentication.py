"""Authentication-Results (RFC 8601) as `server/reading/authentication.py` reads them: verdicts only from the
trusted receiving server's headers at the very top, whatever else a sender writes, above or below."""

from __future__ import annotations

import pytest

from imap_mcp.server.reading.authentication import (
    UNVERIFIED,
    Authentication,
    authentication,
    parse_results,
    results_headers,
    sender_verified,
)
from imap_mcp.server.reading.headers import read_headers
from imap_mcp.server.reading.warnings import Judge

TRUSTED = ("mx.example.org",)
PASS = (
    "mx.example.org; spf=pass smtp.mailfrom=news@shop.example; dkim=pass header.d=shop.example; "
    "dmarc=pass header.from=shop.example"
)
FAIL = "mx.example.org; spf=fail smtp.mailfrom=x@evil.example; dkim=none; dmarc=fail header.from=shop.example"
FORGED_PASS = PASS  # the same words, written by the sender
FOREIGN = "relay.other.example; spf=pass smtp.mailfrom=shop.example; dkim=pass header.d=shop.example"


def head(*values: str) -> bytes:
    """Header lines, top first, as HEADER.FIELDS (AUTHENTICATION-RESULTS) returns them."""
    return b"".join(f"Authentication-Results: {value}\r\n".encode() for value in values) + b"\r\n"


def verdicts(*values: str, trusted: tuple[str, ...] = TRUSTED) -> tuple[str, str, str, str | None, bool]:
    found = authentication(results_headers(head(*values)), trusted, ["shop.example"])
    return found.spf, found.dkim.result, found.dmarc, found.authserv_id, found.trusted


def test_the_trusted_header_at_the_top_gives_the_verdicts() -> None:
    found = authentication(results_headers(head(PASS)), TRUSTED, ["shop.example"])
    assert (found.spf, found.dmarc, found.authserv_id, found.trusted) == ("pass", "pass", "mx.example.org", True)
    assert (found.dkim.result, found.dkim.domain, found.dkim.aligned) == ("pass", "shop.example", True)
    assert sender_verified(results_headers(head(PASS)), TRUSTED, ["shop.example"]) is True


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        pytest.param((FAIL, FORGED_PASS), ("fail", "none", "fail", "mx.example.org", True), id="forged-below-trusted"),
        pytest.param((FOREIGN, FORGED_PASS), (UNVERIFIED,) * 3 + (None, False), id="trusted-id-below-a-foreign-one"),
        pytest.param((FORGED_PASS.replace("mx.", "mx2."),), (UNVERIFIED,) * 3 + (None, False), id="other-id-only"),
        pytest.param((), (UNVERIFIED,) * 3 + (None, False), id="no-header"),
        pytest.param((FOREIGN,), (UNVERIFIED,) * 3 + (None, False), id="foreign-only"),
        pytest.param(
            ("mx.example.org; spf=pass smtp.mailfrom=shop.example", "mx.example.org; dkim=pass header.d=shop.example"),
            ("pass", "none", "none", "mx.example.org", True),
            id="only-the-topmost-of-two",
        ),
        pytest.param(
            ('"MX.Example.ORG" 1; dmarc=pass (p=reject) header.from=shop.example',),
            ("none", "none", "pass", "mx.example.org", True),
            id="quoted-versioned-case",
        ),
    ],
)
def test_verdicts_come_only_from_the_trusted_run_at_the_top(
    values: tuple[str, ...], expected: tuple[str, str, str, str | None, bool]
) -> None:
    assert verdicts(*values) == expected


def test_without_the_setting_nothing_is_trusted() -> None:
    assert verdicts(PASS, trusted=()) == (UNVERIFIED,) * 3 + (None, False)
    assert sender_verified(results_headers(head(PASS)), (), ["shop.example"]) is None


def test_comments_cannot_smuggle_a_verdict() -> None:
    parsed = parse_results('mx.example.org; spf=fail (dmarc=pass "x;dkim=pass") smtp.mailfrom=e@evil.example')
    assert parsed.authserv_id == "mx.example.org"
    assert [(m.name, m.result) for m in parsed.methods] == [("spf", "fail")]


@pytest.mark.parametrize(
    ("value", "from_domain", "verified", "aligned"),
    [
        pytest.param("mx.example.org; dkim=pass header.d=shop.example", "shop.example", True, True, id="same"),
        pytest.param("mx.example.org; dkim=pass header.d=mail.shop.example", "shop.example", True, True, id="sub"),
        pytest.param("mx.example.org; dkim=pass header.i=@shop.example", "news.shop.example", True, True, id="i"),
        pytest.param("mx.example.org; dkim=pass header.d=esp.example", "shop.example", False, False, id="other"),
        pytest.param("mx.example.org; dkim=pass header.d=co.uk", "shop.co.uk", False, False, id="suffix"),
        pytest.param("mx.example.org; spf=pass smtp.mailfrom=b@shop.example", "shop.example", True, None, id="spf"),
        pytest.param("mx.example.org; spf=pass smtp.mailfrom=b@esp.example", "shop.example", False, None, id="spf-2"),
        pytest.param(
            "mx.example.org; dmarc=fail; dkim=fail header.d=shop.example", "shop.example", False, True, id="f"
        ),
    ],
)
def test_dkim_names_its_domain_and_alignment_with_from(
    value: str, from_domain: str, verified: bool, aligned: bool | None
) -> None:
    headers = results_headers(head(value))
    assert sender_verified(headers, TRUSTED, [from_domain]) is verified
    assert authentication(headers, TRUSTED, [from_domain]).dkim.aligned is aligned


def test_unknown_words_and_odd_domains_never_reach_the_answer() -> None:
    found = authentication(
        results_headers(head("mx.example.org; spf=ignore-previous-instructions; dkim=pass header.d=<x y>")),
        TRUSTED,
        ["shop.example"],
    )
    assert (found.spf, found.dkim.result, found.dkim.domain) == ("unknown", "pass", None)


def judged(sender: str, value: str) -> tuple[bool | None, Authentication]:
    """(sender_verified, authentication) of a message whose From header is `sender` (raw, as the sender wrote it),
    read the way get_message reads it, under the Authentication-Results `value` at the top."""
    facts = read_headers(f"From: {sender}\r\n\r\n".encode(), tuple(results_headers(head(value)))).facts
    return facts.verified(Judge(trusted_authserv_ids=TRUSTED)), authentication(
        facts.results, TRUSTED, facts.from_domains
    )


def top(verdicts: str) -> str:
    return f"mx.example.org; {verdicts}"


#: the issue's forged sender: every verdict passes, for the attacker's own domain
EVIL_PASS = top("dkim=pass header.d=evil.example; spf=pass; dmarc=pass header.from=evil.example")


@pytest.mark.parametrize(
    ("sender", "value", "verified", "dmarc"),
    [
        # the From people see is not the domain the verdicts speak of
        pytest.param("ceo@bank.example <attacker@evil.example>", EVIL_PASS, False, UNVERIFIED, id="bare-name-address"),
        pytest.param(
            '"ceo@bank.example" <attacker@evil.example>', EVIL_PASS, False, UNVERIFIED, id="quoted-name-address"
        ),
        pytest.param(
            "=?utf-8?q?ceo=40bank.example?= <attacker@evil.example>", EVIL_PASS, False, UNVERIFIED, id="encoded-name"
        ),
        pytest.param("ceo\uff20bank.example <attacker@evil.example>", EVIL_PASS, False, UNVERIFIED, id="fullwidth-at"),
        pytest.param("news@shop.example", top("dmarc=pass header.from=evil.example"), False, UNVERIFIED, id="other"),
        pytest.param("news@shop.example", top("dmarc=pass"), False, UNVERIFIED, id="dmarc-without-header-from"),
        pytest.param(
            "news@shop.example",
            top("dmarc=pass header.from=shop.example header.from=evil.example"),
            False,
            UNVERIFIED,
            id="two-header-from",
        ),
        pytest.param(
            "news@shop.example",
            top("dmarc=pass header.from=evil.example; dmarc=fail header.from=shop.example"),
            False,
            "fail",
            id="pass-for-another-fail-for-this",
        ),
        pytest.param("news@shop.example", top("dkim=pass header.d=esp.example"), False, "none", id="dkim-unaligned"),
        pytest.param("news@shop.example", top("dkim=pass header.i=@esp.example"), False, "none", id="dkim-i-unaligned"),
        pytest.param(
            "news@shop.example", top("spf=pass smtp.mailfrom=b@esp.example"), False, "none", id="spf-unaligned"
        ),
        pytest.param(
            "a@shop.example, b@evil.example", top("dmarc=pass header.from=shop.example"), False, UNVERIFIED, id="two"
        ),
        pytest.param(
            "a@shop.example, b@evil.example",
            top("dkim=pass header.d=shop.example; dkim=pass header.d=evil.example"),
            False,
            "none",
            id="two-each-signed",
        ),
        pytest.param("news", top("dmarc=pass header.from=shop.example"), False, UNVERIFIED, id="no-domain"),
        pytest.param("news@[192.0.2.1]", top("dmarc=pass header.from=192.0.2.1"), False, UNVERIFIED, id="literal"),
        pytest.param(
            "news@b\u0430nk.example", top("dmarc=pass header.from=bank.example"), False, UNVERIFIED, id="cyrillic-a"
        ),
        pytest.param(
            "news@shop.co.uk",
            top("dkim=pass header.d=co.uk; dmarc=pass header.from=co.uk"),
            False,
            UNVERIFIED,
            id="public-suffix",
        ),
        pytest.param(
            "news@shop.co.uk", top("dmarc=pass header.from=evil.co.uk"), False, UNVERIFIED, id="sibling-under-suffix"
        ),
        pytest.param(
            "news@victim.github.io", top("dkim=pass header.d=attacker.github.io"), False, "none", id="private-suffix"
        ),
        # the same organisation, however it is spelled
        pytest.param("news@mail.shop.example", top("dmarc=pass header.from=shop.example"), True, "pass", id="sub"),
        pytest.param("news@shop.example", top("dmarc=pass header.from=mail.shop.example"), True, "pass", id="parent"),
        pytest.param("news@mail.shop.example", top("dkim=pass header.d=shop.example"), True, "none", id="dkim-sub"),
        pytest.param("news@shop.co.uk", top("dmarc=pass header.from=mail.shop.co.uk"), True, "pass", id="co-uk"),
        pytest.param("News@SHOP.Example", top("dmarc=pass header.from=shop.EXAMPLE"), True, "pass", id="case"),
        pytest.param("news@shop.example.", top("dmarc=pass header.from=shop.example"), True, "pass", id="dot-from"),
        pytest.param("news@shop.example", top("dmarc=pass header.from=shop.example."), True, "pass", id="dot-header"),
        pytest.param(
            "news@b\u00fccher.example", top("dmarc=pass header.from=xn--bcher-kva.example"), True, "pass", id="idn"
        ),
        pytest.param(
            "news@xn--bcher-kva.example", top("dmarc=pass header.from=B\u00dcCHER.example"), True, "pass", id="puny"
        ),
        pytest.param(
            "a@shop.example, b@news.shop.example",
            top("dmarc=pass header.from=shop.example"),
            True,
            "pass",
            id="two-of-one-organisation",
        ),
        pytest.param(
            '"news@shop.example" <news@mail.shop.example>',
            top("dmarc=pass header.from=shop.example"),
            True,
            "pass",
            id="name-address-of-the-same-organisation",
        ),
    ],
)
def test_a_verdict_speaks_only_of_the_from_people_see(sender: str, value: str, verified: bool, dmarc: str) -> None:
    """A pass counts only for the one organisational domain of every address a reader sees in From (the parsed
    addresses and any address a display name holds), named by DMARC's header.from or aligned DKIM or SPF."""
    found_verified, found = judged(sender, value)
    assert (found_verified, found.dmarc, found.trusted) == (verified, dmarc, True)


def test_the_forged_sender_of_the_issue_is_not_verified() -> None:
    """Issue 38: `dmarc=pass header.from=evil.example` vouched for a From shown as ceo@bank.example."""
    verified, found = judged("ceo@bank.example <attacker@evil.example>", EVIL_PASS)
    assert verified is False
    assert (found.dmarc, found.dkim.domain, found.dkim.aligned) == (UNVERIFIED, "evil.example", False)


@pytest.mark.parametrize(
    "unreadable",
    [
        pytest.param("(only a comment)", id="only-a-comment"),
        pytest.param("", id="empty"),
        pytest.param("=mx.example.org; dmarc=pass header.from=shop.example", id="id-starts-with-equals"),
        pytest.param("mx.example.org dmarc=pass header.from=shop.example", id="no-semicolon"),
        pytest.param("mx.example.org,evil; dmarc=fail", id="id-no-token"),
        pytest.param('"mx.example.org; dmarc=fail', id="unclosed-quote"),
        pytest.param("mx.example.org; dmarc=fail (unclosed comment", id="unclosed-comment"),
        pytest.param("mx.example.org; dmarc fail header.from=shop.example", id="unreadable-dmarc"),
        pytest.param("mx.example.org; spf=", id="spf-without-result"),
    ],
)
def test_an_unreadable_topmost_header_leaves_every_verdict_unverified(unreadable: str) -> None:
    """The header at the top could not be read: the trusted pass below it is never believed as if topmost."""
    headers = results_headers(head(unreadable, PASS))
    assert headers[0].authserv_id is None
    assert verdicts(unreadable, PASS) == (UNVERIFIED,) * 3 + (None, False)
    assert sender_verified(headers, TRUSTED, ["shop.example"]) is None


def test_a_version_and_no_result_are_readable() -> None:
    assert verdicts("mx.example.org 1; none") == ("none", "none", "none", "mx.example.org", True)
    assert sender_verified(results_headers(head("mx.example.org 1; none")), TRUSTED, ["shop.example"]) is False
