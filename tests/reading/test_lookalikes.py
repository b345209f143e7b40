"""Look-alike sender domains (`server/reading/lookalikes.py`) and the header warnings that use them
(`server/reading/warnings.py`), from Unicode's confusables and scripts and the Public Suffix List."""

from __future__ import annotations

import pytest

from imap_mcp.server.reading.lookalikes import KnownDomains, lookalike_reasons, skeleton
from imap_mcp.server.reading.warnings import SenderFacts, display_name_warning, link_mismatches, reply_to_warning

KNOWN = KnownDomains.of(["paypal.com", "example.org", "microsoft.com", "bank.co.uk"])
CYRILLIC_A = "\u0430"


@pytest.mark.parametrize(
    ("domain", "imitates"),
    [
        pytest.param("paypa1.com", "paypal.com", id="digit-one"),
        pytest.param(f"p{CYRILLIC_A}ypal.com", "paypal.com", id="cyrillic-a"),
        pytest.param(f"secure.p{CYRILLIC_A}ypal.com", "paypal.com", id="subdomain"),
        pytest.param("xn--pypal-4ve.com", "paypal.com", id="punycode-of-cyrillic"),
        pytest.param("rnicrosoft.com", "microsoft.com", id="rn-for-m"),
        pytest.param("exarnple.org", "example.org", id="rn-inside"),
        pytest.param("EXAMPLE.0RG".lower(), "example.org", id="zero-for-o"),
        pytest.param("bank.c0.uk", "bank.co.uk", id="zero-in-the-suffix"),
    ],
)
def test_confusables_of_known_domains_are_named(domain: str, imitates: str | None) -> None:
    reasons = lookalike_reasons(domain, KNOWN)
    named = [r for r in reasons if "looks like" in r]
    assert (named[0].split("looks like ")[1].split(",")[0] if named else None) == imitates
    assert all(reason.isascii() for reason in reasons)


@pytest.mark.parametrize("domain", ["paypal.com", "mail.paypal.com", "example.org", "newsletter.shop.example"])
def test_known_domains_their_subdomains_and_strangers_are_no_lookalikes(domain: str) -> None:
    assert lookalike_reasons(domain, KNOWN) == []


def test_mixed_scripts_and_internationalised_names_are_said_as_such() -> None:
    assert lookalike_reasons(f"g{CYRILLIC_A}te.example", KnownDomains()) == [
        "the From domain xn--gte-6cd.example mixes scripts in one label",
        "the From domain xn--gte-6cd.example is an internationalised name (punycode), which can imitate another",
    ]
    japanese = lookalike_reasons("\u4f8b\u3048.jp", KnownDomains())
    assert len(japanese) == 1 and "internationalised" in japanese[0]  # Han with Hiragana is how Japanese is written


def test_the_skeleton_follows_unicode_confusables() -> None:
    assert skeleton("paypal") == skeleton(f"p{CYRILLIC_A}yp{CYRILLIC_A}l") == skeleton("PAYPAL")
    assert skeleton("modern") == skeleton("rnodern")
    assert skeleton("google") == skeleton("g00gle")
    assert skeleton("paypal") != skeleton("paypai")


@pytest.mark.parametrize(
    ("name", "address", "warned"),
    [
        pytest.param("service@paypal.com", "x@evil.example", True, id="other-address"),
        pytest.param("PayPal (service@paypal.com)", "x@evil.example", True, id="in-words"),
        pytest.param("x@evil.example", "x@evil.example", False, id="own-address"),
        pytest.param("X@Evil.Example", "x@evil.example", False, id="own-address-case"),
        pytest.param("Bob at home", "bob@example.net", False, id="no-address"),
        pytest.param("support\uff20paypal.com", "x@evil.example", True, id="fullwidth-at"),
    ],
)
def test_an_address_in_the_display_name_that_is_not_the_senders(name: str, address: str, warned: bool) -> None:
    warning = display_name_warning(SenderFacts(name=name, address=address))
    assert (warning is not None) is warned
    if warning is not None:
        assert warning.detail == (
            "the From display name shows an address at paypal.com, but the sender's address is at evil.example"
        )


def test_reply_to_on_another_site() -> None:
    elsewhere = reply_to_warning(SenderFacts(address="a@news.shop.example", reply_to=("b@collector.example",)))
    assert (
        elsewhere is not None
        and elsewhere.detail == "replies go to collector.example, while the mail is from news.shop.example"
    )
    assert reply_to_warning(SenderFacts(address="a@news.shop.example", reply_to=("help@shop.example",))) is None
    assert reply_to_warning(SenderFacts(address="a@shop.example")) is None


def test_links_whose_text_names_another_site() -> None:
    assert link_mismatches(
        [
            ("www.paypal.com", "https://evil.example/x"),
            ("https://paypal.com/login", "https://paypal.com.evil.example/"),
            ("paypal.com", "https://paypal.com@evil.example/"),
            ("support@bank.co.uk", "mailto:support@bank-help.example"),
            ("shop.example", "javascript:alert(1)"),
            ("Shop now", "https://click.mailer.example/1"),
            ("www.shop.example", "https://shop.example/"),
            ("https://www.paypal.com", "https://www.paypal.com/de"),
        ]
    ) == [
        ("www.paypal.com", "evil.example"),
        ("paypal.com", "paypal.com.evil.example"),
        ("paypal.com", "evil.example"),
        ("bank.co.uk", "bank-help.example"),
        ("shop.example", "javascript:"),
    ]
