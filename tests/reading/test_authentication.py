"""Authentication-Results (RFC 8601) as `server/reading/authentication.py` reads them: verdicts only from the
trusted receiving server's headers at the very top, whatever else a sender writes, above or below."""

from __future__ import annotations

import pytest

from imap_mcp.server.reading.authentication import (
    UNVERIFIED,
    authentication,
    parse_results,
    results_headers,
    sender_verified,
)

TRUSTED = ("mx.example.org",)
PASS = "mx.example.org; spf=pass smtp.mailfrom=news@shop.example; dkim=pass header.d=shop.example; dmarc=pass"
FAIL = "mx.example.org; spf=fail smtp.mailfrom=x@evil.example; dkim=none; dmarc=fail header.from=shop.example"
FORGED_PASS = PASS  # the same words, written by the sender
FOREIGN = "relay.other.example; spf=pass smtp.mailfrom=shop.example; dkim=pass header.d=shop.example"


def head(*values: str) -> bytes:
    """Header lines, top first, as HEADER.FIELDS (AUTHENTICATION-RESULTS) returns them."""
    return b"".join(f"Authentication-Results: {value}\r\n".encode() for value in values) + b"\r\n"


def verdicts(*values: str, trusted: tuple[str, ...] = TRUSTED) -> tuple[str, str, str, str | None, bool]:
    found = authentication(results_headers(head(*values)), trusted, "shop.example")
    return found.spf, found.dkim.result, found.dmarc, found.authserv_id, found.trusted


def test_the_trusted_header_at_the_top_gives_the_verdicts() -> None:
    found = authentication(results_headers(head(PASS)), TRUSTED, "shop.example")
    assert (found.spf, found.dmarc, found.authserv_id, found.trusted) == ("pass", "pass", "mx.example.org", True)
    assert (found.dkim.result, found.dkim.domain, found.dkim.aligned) == ("pass", "shop.example", True)
    assert sender_verified(results_headers(head(PASS)), TRUSTED, "shop.example") is True


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
    assert sender_verified(results_headers(head(PASS)), (), "shop.example") is None


def test_comments_cannot_smuggle_a_verdict() -> None:
    parsed = parse_results('mx.example.org; spf=fail (dmarc=pass "x;dkim=pass") smtp.mailfrom=e@evil.example')
    assert parsed is not None
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
    assert sender_verified(headers, TRUSTED, from_domain) is verified
    assert authentication(headers, TRUSTED, from_domain).dkim.aligned is aligned


def test_unknown_words_and_odd_domains_never_reach_the_answer() -> None:
    found = authentication(
        results_headers(head("mx.example.org; spf=ignore-previous-instructions; dkim=pass header.d=<x y>")),
        TRUSTED,
        "shop.example",
    )
    assert (found.spf, found.dkim.result, found.dkim.domain) == ("unknown", "pass", None)
