"""One approval, one spelling, one effect: a seal opens only as the exact text it was issued as, and
what derives from an approval (a send's Message-ID) comes from its verified content, never its text.

Property test on the sealer (every re-encoding, padding, case change or character substitution of a
valid seal is refused or opens onto the same approval), then the end-to-end census the issue asks
for: every such spelling of a real confirm_token and a real requestState sent to `send_message`
against the real aiosmtpd listener and Dovecot's Sent mailbox — one delivery, one copy in Sent.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from harness import served, structured
from hypothesis import given
from hypothesis import strategies as st
from mcp.types import ElicitResult, InputRequiredResult, InputResponses
from smtp_capture import SENDER, CaptureSMTP

from imap_mcp.sealing import CLOCK_SKEW, BadSeal, Claim, KeyRing, Sealer, SealError, SealExpired
from imap_mcp.server.config import load_settings

KEY = "k" * 16 + "-one-spelling-0123456789"
NOW = 1_900_000_000.0
CLAIM = Claim("f" * 64, "q" * 32)


def sealer(now: float = NOW) -> Sealer:
    return Sealer(KeyRing([KEY]), purpose="confirm-token", ttl=300, clock=lambda: now)


def spare_bits_variants(token: str) -> list[str]:
    """The token with the last character of a part changed only in bits base64 decoding drops."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    variants = []
    parts = token.split(".")
    for index, part in enumerate(parts):
        spare = {2: 4, 3: 2}.get(len(part) % 4)  # characters of the last group → bits it does not use
        if not part or spare is None:
            continue
        value = alphabet.index(part[-1])
        for flip in range(1, 2**spare):
            changed = alphabet[value ^ flip]
            variants.append(".".join([*parts[:index], part[:-1] + changed, *parts[index + 1 :]]))
    return variants


def lenient_spellings(token: str) -> list[str]:
    """Spellings of `token` that lenient (itsdangerous) decoding reads as the same bytes, or nearly."""
    head, _, signature = token.rpartition(".")
    middle = len(signature) // 2
    skipped = ["!", "=", "\n", " ", "é", "+", "/", "\u200b", "*"]
    return [
        token + "=",
        token + "==",
        head + "." + signature + "===",
        *(head + "." + signature[:middle] + char + signature[middle:] for char in skipped),
        *(token[:at] + "=" + token[at:] for at in range(1, len(token)) if token[at - 1] == "."),
        " " + token,
        token + "\n",
        *spare_bits_variants(token),
    ]


def test_a_seal_opens_only_in_the_spelling_it_was_issued_in() -> None:
    s = sealer()
    token = s.seal(CLAIM, None)
    s.verify(token, CLAIM, None)
    variants = lenient_spellings(token)
    assert len(variants) > 20
    for variant in variants:
        with pytest.raises(BadSeal):
            s.verify(variant, CLAIM, None)


@given(st.data())
def test_every_edit_of_a_seal_is_refused_or_the_same_approval(data: st.DataObject) -> None:
    s = sealer()
    token = s.seal(CLAIM, "alice")
    identity = s.verify(token, CLAIM, "alice").identity
    edits = st.one_of(
        st.tuples(st.just("swap"), st.integers(0, len(token) - 1), st.characters()),
        st.tuples(st.just("insert"), st.integers(0, len(token)), st.characters()),
        st.tuples(st.just("case"), st.integers(0, len(token) - 1), st.just("")),
        st.tuples(st.just("delete"), st.integers(0, len(token) - 1), st.just("")),
    )
    kind, at, char = data.draw(edits)
    variant = {
        "swap": lambda: token[:at] + char + token[at + 1 :],
        "insert": lambda: token[:at] + char + token[at:],
        "case": lambda: token[:at] + token[at].swapcase() + token[at + 1 :],
        "delete": lambda: token[:at] + token[at + 1 :],
    }[kind]()
    try:
        opened = s.verify(variant, CLAIM, "alice")
    except SealError:
        return
    assert variant == token and opened.identity == identity


def test_the_identity_of_an_approval_is_its_content() -> None:
    """Same claim and second: the same approval, whichever key of the ring sealed it; anything else differs."""
    old, new = KEY, "n" * 16 + "-one-spelling-0123456789"
    by_old = Sealer(KeyRing([old]), purpose="confirm-token", ttl=300, clock=lambda: NOW)
    ring = Sealer(KeyRing([new, old]), purpose="confirm-token", ttl=300, clock=lambda: NOW)
    token_old, token_new = by_old.seal(CLAIM, None), ring.seal(CLAIM, None)
    assert token_old != token_new
    assert ring.verify(token_old, CLAIM, None).identity == ring.verify(token_new, CLAIM, None).identity
    later = Sealer(KeyRing([new]), purpose="confirm-token", ttl=300, clock=lambda: NOW + 1).seal(CLAIM, None)
    other_principal = ring.seal(CLAIM, "bob")
    identities = {
        ring.verify(token_new, CLAIM, None).identity,
        ring.verify(later, CLAIM, None).identity,
        ring.verify(other_principal, CLAIM, "bob").identity,
    }
    assert len(identities) == 3


def test_a_replica_whose_clock_is_a_little_behind_accepts_a_fresh_seal() -> None:
    """Sealed on a replica 2 s ahead: the answer counts here (it was asked again before)."""
    token = sealer(now=NOW + 2).seal(CLAIM, None)
    sealer().verify(token, CLAIM, None)
    sealer().verify(sealer(now=NOW + CLOCK_SKEW).seal(CLAIM, None), CLAIM, None)
    with pytest.raises(SealExpired):
        sealer().verify(sealer(now=NOW + CLOCK_SKEW + 1).seal(CLAIM, None), CLAIM, None)


# --- the census: every spelling of a real approval, against aiosmtpd and Dovecot ---

MESSAGE: dict[str, Any] = {"to": ["alice@example.com"], "subject": "One approval", "body": "Sent once.\n"}
YES: InputResponses = {"approval": ElicitResult(action="accept", content={"approve": True})}


def sent_mailbox_census(account: Any) -> list[str]:
    """The Message-ID of every message in Sent, sorted."""
    client = account.imap()
    try:
        client.select_folder("Sent", readonly=True)
        fetched = client.fetch(client.search(["ALL"]), ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"])
        return sorted(
            next(v for k, v in data.items() if k.startswith(b"BODY")).decode().split(":", 1)[1].strip()
            for data in fetched.values()
        )
    finally:
        client.logout()


def state_spellings(state: str) -> list[str]:
    """Other spellings of the SDK's sealed requestState (`v1.` + base64url)."""
    prefix, _, body = state.partition(".")
    return [
        state + "=",
        state + "==",
        f"{prefix}.{body[:10]}!{body[10:]}",
        state.replace("v1.", "V1."),
        *spare_bits_variants(state),
    ]


@pytest.mark.anyio
async def test_every_spelling_of_one_confirm_token_sends_one_message(account: Any) -> None:
    before = sent_mailbox_census(account)
    with CaptureSMTP(auth=(account.username, account.password)) as smtp:
        settings = load_settings(account.env(**smtp.env(), SMTP_FROM=SENDER))
        async with served(settings, mode="2026-07-28") as client:
            token = structured(await client.call_tool("send_message", MESSAGE))["confirm_token"]
            sent = structured(await client.call_tool("send_message", {**MESSAGE, "confirm_token": token}))
            outcomes = []
            for variant in lenient_spellings(token):
                result = await client.call_tool("send_message", {**MESSAGE, "confirm_token": variant})
                outcomes.append("refused" if result.is_error else result.structured_content["status"])
        assert sent["status"] == "sent"
        assert set(outcomes) <= {"refused", "already_sent"}, outcomes
        assert [m["Message-ID"] for m in smtp.messages] == [sent["message_id"]]
        assert sent_mailbox_census(account) == sorted([*before, sent["message_id"]])


@pytest.mark.anyio
async def test_every_spelling_of_one_approved_state_sends_one_message(account: Any) -> None:
    before = sent_mailbox_census(account)
    with CaptureSMTP(auth=(account.username, account.password)) as smtp:
        settings = load_settings(account.env(**smtp.env(), SMTP_FROM=SENDER))
        async with served(settings, mode="2026-07-28", elicitation_callback=lambda *_: None) as client:
            asked = await client.session.call_tool("send_message", MESSAGE, allow_input_required=True)
            assert isinstance(asked, InputRequiredResult) and asked.request_state
            sent = await client.session.call_tool(
                "send_message",
                MESSAGE,
                allow_input_required=True,
                input_responses=YES,
                request_state=asked.request_state,
            )
            outcomes = []
            for variant in state_spellings(asked.request_state):
                result = await client.session.call_tool(
                    "send_message", MESSAGE, allow_input_required=True, input_responses=YES, request_state=variant
                )
                outcomes.append(
                    "asked again" if isinstance(result, InputRequiredResult) else structured(result)["status"]
                )
        message_id = structured(sent)["message_id"]
        assert set(outcomes) <= {"asked again", "already_sent"}, outcomes
        assert [m["Message-ID"] for m in smtp.messages] == [message_id]
        assert sent_mailbox_census(account) == sorted([*before, message_id])


def test_spare_bits_variants_decode_to_the_same_bytes() -> None:
    """The helper really produces spellings lenient decoding cannot tell apart (else the tests above prove less)."""
    token = sealer().seal(CLAIM, None)
    variants = spare_bits_variants(token)
    assert variants
    for variant in variants:
        assert [base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)) for p in variant.split(".")] == [
            base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)) for p in token.split(".")
        ]
