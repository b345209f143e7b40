"""sealing/: canonical fingerprints, the key ring, and seals that open only onto exactly what was asked.

Property tests: whatever is changed about a sealed approval or token (its bytes, the key, the
time, the target in any field, the principal, the purpose), it never verifies.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from imap_mcp.sealing import (
    BadSeal,
    Claim,
    KeyRing,
    Sealer,
    SealError,
    SealExpired,
    Target,
    WrongTarget,
    canonical_bytes,
    fingerprint,
    question_digest,
)

OLD = "o" * 16 + "ld-key-0123456789abcdef"
NEW = "n" * 16 + "ew-key-0123456789abcdef"
NOW = 1_900_000_000.0

uid_sets = st.lists(st.integers(min_value=1, max_value=2**32 - 1), min_size=1, max_size=30)
names = st.text(min_size=1, max_size=20)
operations = st.sampled_from(["trash", "delete_permanently", "move", "copy", "delete_mailbox", "rename_mailbox"])
targets = st.builds(
    Target,
    operation=operations,
    account=st.sampled_from(["alice@imap.example", "bob@imap.example", "alice@other.example"]),
    source=names,
    source_uidvalidity=st.integers(min_value=1, max_value=2**32 - 1),
    uids=uid_sets.map(tuple),
    destination=st.none() | names,
    destination_uidvalidity=st.none() | st.integers(min_value=1, max_value=2**32 - 1),
    source_uidnext=st.none() | st.integers(min_value=1, max_value=2**32),
    source_messages=st.none() | st.integers(min_value=0, max_value=10**7),
    content=st.none() | st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
)


def sealer(keys: list[str], purpose: str = "approval-state", now: float = NOW, ttl: int = 600) -> Sealer:
    return Sealer(KeyRing(keys), purpose=purpose, ttl=ttl, clock=lambda: now)


def claim_for(target: Target, question: str = "Move 2 messages?") -> Claim:
    return Claim(fingerprint(target), question_digest(question))


def test_uid_order_and_duplicates_do_not_change_the_target() -> None:
    a = Target("move", "u@h", "INBOX", 7, (3, 1, 2, 2), "Archive", 9)
    b = Target("move", "u@h", "INBOX", 7, (1, 2, 3), "Archive", 9)
    assert canonical_bytes(a) == canonical_bytes(b) and fingerprint(a) == fingerprint(b)


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"uids": (1, 2)}, "an approval for [1] does not execute [1, 2]"),
        ({"destination": "Public/Shared"}, "one for Archive does not execute against Public/Shared"),
        ({"operation": "copy"}, "one for move does not execute a copy"),
        ({"destination_uidvalidity": 10}, "one given before the destination was re-created does not execute after"),
        ({"source_uidvalidity": 8}, "nor after the source was re-created"),
        ({"account": "u@other"}, "nor on another account"),
        ({"source_uidnext": 12}, "a mailbox delete approved before new mail arrived does not cover it after"),
        ({"source_messages": 3}, "nor after mail left it"),
        ({"content": "f" * 64}, "a send approved for one message does not send another"),
    ],
)
def test_the_seed_examples_are_different_targets(change: dict[str, object], why: str) -> None:
    approved = Target("move", "u@h", "INBOX", 7, (1,), "Archive", 9)
    assert fingerprint(dataclasses.replace(approved, **change)) != fingerprint(approved), why  # type: ignore[arg-type]


@given(targets)
def test_a_seal_opens_onto_exactly_its_claim(target: Target) -> None:
    s = sealer([OLD])
    token = s.seal(claim_for(target), principal=None)
    s.verify(token, claim_for(target), principal=None)


def decodes_alike(token: str, other: str) -> bool:
    """Whether two tokens carry the same bytes: base64's last character of a part has spare bits, so a
    change there can leave the decoded payload and signature untouched (nothing was tampered with)."""

    def parts(value: str) -> list[bytes] | None:
        try:
            return [base64.urlsafe_b64decode(p + "=" * (-len(p) % 4)) for p in value.split(".")]
        except (binascii.Error, ValueError):
            return None

    return parts(token) is not None and parts(token) == parts(other)


@given(targets, st.data())
def test_tampered_bytes_never_verify(target: Target, data: st.DataObject) -> None:
    s = sealer([OLD])
    token = s.seal(claim_for(target), None)
    position = data.draw(st.integers(min_value=0, max_value=len(token) - 1))
    replacement = data.draw(st.sampled_from("AaBb019-_.Zz"))
    assume(token[position] != replacement)
    forged = token[:position] + replacement + token[position + 1 :]
    assume(not decodes_alike(token, forged))
    with pytest.raises(SealError):
        s.verify(forged, claim_for(target), None)


@given(targets, st.text(min_size=32, max_size=64))
def test_a_seal_made_under_another_key_does_not_open(target: Target, other_key: str) -> None:
    assume(other_key.encode() != OLD.encode())
    token = sealer([other_key]).seal(claim_for(target), None)
    with pytest.raises(BadSeal):
        sealer([OLD]).verify(token, claim_for(target), None)


@given(targets, st.integers(min_value=601, max_value=10**6))
def test_an_old_seal_has_expired(target: Target, age: int) -> None:
    token = sealer([OLD]).seal(claim_for(target), None)
    with pytest.raises(SealExpired):
        sealer([OLD], now=NOW + age).verify(token, claim_for(target), None)


def test_a_seal_dated_in_the_future_counts_as_expired() -> None:
    target = Target("copy", "u@h", "INBOX", 1, (1,), "Archive", 2)
    token = sealer([OLD], now=NOW + 120).seal(claim_for(target), None)
    with pytest.raises(SealExpired):
        sealer([OLD]).verify(token, claim_for(target), None)


def changed_targets(target: Target) -> st.SearchStrategy[Target]:
    """Every way a target can differ: widened, narrowed or swapped UIDs, other mailboxes, operation, UIDVALIDITY,
    the mailbox's UIDNEXT or message count (a mailbox delete), or the content digest (a send)."""
    uids = target.uids
    variants = [
        st.integers(min_value=1, max_value=2**32 - 1).map(lambda u: dataclasses.replace(target, uids=(*uids, u))),
        st.just(dataclasses.replace(target, uids=uids[:-1])) if len(uids) > 1 else st.nothing(),
        st.integers(min_value=1, max_value=2**32 - 1).map(lambda u: dataclasses.replace(target, uids=(u,))),
        names.map(lambda n: dataclasses.replace(target, source=n)),
        names.map(lambda n: dataclasses.replace(target, destination=n)),
        st.just(dataclasses.replace(target, source=target.destination or "x", destination=target.source)),
        operations.map(lambda op: dataclasses.replace(target, operation=op)),
        st.integers(min_value=1, max_value=2**32 - 1).map(lambda v: dataclasses.replace(target, source_uidvalidity=v)),
        st.integers(min_value=1).map(lambda v: dataclasses.replace(target, destination_uidvalidity=v)),
        st.integers(min_value=1).map(lambda v: dataclasses.replace(target, source_uidnext=v)),
        st.just(dataclasses.replace(target, source_uidnext=None)),
        st.integers(min_value=0).map(lambda v: dataclasses.replace(target, source_messages=v)),
        st.just(dataclasses.replace(target, source_messages=None)),
        st.text(min_size=1, max_size=64).map(lambda v: dataclasses.replace(target, content=v)),
        st.just(dataclasses.replace(target, content=None)),
    ]
    return st.one_of(variants).filter(lambda other: fingerprint(other) != fingerprint(target))


@given(targets, st.data())
def test_a_seal_for_another_target_is_wrong_target(target: Target, data: st.DataObject) -> None:
    other = data.draw(changed_targets(target))
    s = sealer([OLD])
    token = s.seal(claim_for(target), None)
    with pytest.raises(WrongTarget):
        s.verify(token, claim_for(other), None)


def test_move_and_copy_trash_and_permanent_are_not_interchangeable() -> None:
    s = sealer([OLD])
    for approved, attempted in (("move", "copy"), ("copy", "move"), ("trash", "delete_permanently")):
        target = Target(approved, "u@h", "INBOX", 1, (1, 2), "Trash", 2)
        token = s.seal(claim_for(target), None)
        with pytest.raises(WrongTarget):
            s.verify(token, claim_for(dataclasses.replace(target, operation=attempted)), None)


def test_a_seal_for_another_question_is_wrong_target() -> None:
    target = Target("move", "u@h", "INBOX", 1, (1,), "Archive", 2)
    s = sealer([OLD])
    token = s.seal(claim_for(target, "Move 1 message?"), None)
    with pytest.raises(WrongTarget):
        s.verify(token, claim_for(target, "Move 1 message to somewhere else?"), None)


@given(targets, st.sampled_from([None, "alice", "bob"]), st.sampled_from([None, "alice", "bob"]))
def test_a_seal_opens_only_for_its_principal(target: Target, sealed_for: str | None, opened_by: str | None) -> None:
    s = sealer([OLD])
    token = s.seal(claim_for(target), sealed_for)
    if sealed_for == opened_by:
        s.verify(token, claim_for(target), opened_by)
    else:
        with pytest.raises(BadSeal):
            s.verify(token, claim_for(target), opened_by)


def test_an_approval_state_is_not_a_confirm_token_nor_the_reverse() -> None:
    target = Target("trash", "u@h", "INBOX", 1, (4,), "Trash", 2)
    state = sealer([OLD], purpose="approval-state").seal(Claim(fingerprint(target)), None)
    with pytest.raises(BadSeal):
        sealer([OLD], purpose="confirm-token").verify(state, Claim(fingerprint(target)), None)


@pytest.mark.parametrize(
    ("sealing_ring", "opening_ring"),
    [
        pytest.param([OLD], [OLD, NEW], id="rotation-phase-1: new key added, old still seals"),
        pytest.param([OLD, NEW], [NEW, OLD], id="rotation-phase-2: new key seals, old still opens"),
        pytest.param([NEW, OLD], [NEW], id="rotation-phase-3: old key retired"),
    ],
)
def test_key_rotation_keeps_an_approval_in_flight_valid(sealing_ring: list[str], opening_ring: list[str]) -> None:
    target = Target("move", "u@h", "INBOX", 1, (1,), "Archive", 2)
    token = sealer(sealing_ring).seal(claim_for(target), None)
    sealer(opening_ring).verify(token, claim_for(target), None)


def test_a_retired_key_no_longer_opens() -> None:
    target = Target("move", "u@h", "INBOX", 1, (1,), "Archive", 2)
    token = sealer([OLD]).seal(claim_for(target), None)
    with pytest.raises(BadSeal):
        sealer([NEW]).verify(token, claim_for(target), None)


@pytest.mark.parametrize(
    ("keys", "message"),
    [([], "at least one key"), (["short"], "at least 32"), ([OLD, OLD], "repeats an earlier key")],
)
def test_a_bad_key_ring_is_refused_with_the_fix(keys: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        KeyRing(keys)


def test_a_random_ring_opens_nothing_made_by_another() -> None:
    first, second = KeyRing.random(), KeyRing.random()
    assert first.keys != second.keys and repr(first) == "KeyRing(1 key(s))"
    target = Target("copy", "u@h", "INBOX", 1, (1,), "Archive", 2)
    token = Sealer(first, purpose="p", ttl=60).seal(claim_for(target), None)
    with pytest.raises(BadSeal):
        Sealer(second, purpose="p", ttl=60).open(token, None)


def test_sealing_imports_neither_imap_nor_mcp() -> None:
    import ast
    from pathlib import Path

    import imap_mcp.sealing

    for path in Path(imap_mcp.sealing.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import | ast.ImportFrom):
                modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(m.split(".")[0] in {"mcp", "imapclient", "imaplib"} for m in modules), path
