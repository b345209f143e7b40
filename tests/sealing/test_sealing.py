"""sealing/: canonical fingerprints, the key ring, and seals that open only onto exactly what was asked.

Property tests: whatever is changed about a sealed approval or token (its bytes, the key, the
time, the target in any part — operation, account, a scope's name, value or version, the items,
the content — the principal, the purpose), it never verifies.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from imap_mcp.sealing import (
    BadSeal,
    Claim,
    KeyRing,
    Scope,
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

item_sets = st.lists(st.integers(min_value=1, max_value=2**32 - 1), min_size=1, max_size=30)
names = st.text(min_size=1, max_size=20)
operations = st.sampled_from(
    ["trash", "delete_permanently", "move", "copy", "delete_mailbox", "rename_mailbox", "send", "reply"]
)
scope_names = st.sampled_from(["source", "destination", "mailbox", "new_name", "sender", "original"])
versions = st.lists(st.integers(min_value=0, max_value=2**32), max_size=3).map(tuple)
scopes = st.builds(Scope, name=scope_names, value=names, version=versions)
targets = st.builds(
    Target,
    operation=operations,
    account=st.sampled_from(["alice@imap.example", "bob@imap.example", "alice@other.example"]),
    scopes=st.lists(scopes, max_size=3, unique_by=lambda scope: scope.name).map(tuple),
    items=st.lists(st.integers(min_value=1, max_value=2**32 - 1), max_size=30).map(tuple),
    content=st.none() | st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
)


def mailbox_target(
    operation: str = "move",
    account: str = "u@h",
    source: str = "INBOX",
    source_version: tuple[int, ...] = (7,),
    destination: str = "Archive",
    destination_version: tuple[int, ...] = (9,),
    items: tuple[int, ...] = (1,),
    content: str | None = None,
) -> Target:
    """A target as a message change makes it: a source and a destination mailbox, UIDs as items."""
    scopes = (Scope("source", source, source_version), Scope("destination", destination, destination_version))
    return Target(operation, account, scopes, items, content)


def sealer(keys: list[str], purpose: str = "approval-state", now: float = NOW, ttl: int = 600) -> Sealer:
    return Sealer(KeyRing(keys), purpose=purpose, ttl=ttl, clock=lambda: now)


def claim_for(target: Target, question: str = "Move 2 messages?") -> Claim:
    return Claim(fingerprint(target), question_digest(question))


def test_item_order_and_duplicates_do_not_change_the_target() -> None:
    a = mailbox_target(items=(3, 1, 2, 2))
    b = mailbox_target(items=(1, 2, 3))
    assert canonical_bytes(a) == canonical_bytes(b) and fingerprint(a) == fingerprint(b)


@given(targets)
def test_scope_order_does_not_change_the_target(target: Target) -> None:
    reordered = Target(target.operation, target.account, tuple(reversed(target.scopes)), target.items, target.content)
    assert canonical_bytes(reordered) == canonical_bytes(target)


def test_a_scope_named_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="at most once"):
        Target("move", "u@h", (Scope("source", "INBOX"), Scope("source", "Archive")))


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"items": (1, 2)}, "an approval for [1] does not execute [1, 2]"),
        ({"destination": "Public/Shared"}, "one for Archive does not execute against Public/Shared"),
        ({"operation": "copy"}, "one for move does not execute a copy"),
        ({"destination_version": (10,)}, "one given before the destination was re-created does not execute after"),
        ({"source_version": (8,)}, "nor after the source was re-created"),
        ({"account": "u@other"}, "nor on another account"),
        ({"content": "f" * 64}, "a send approved for one message does not send another"),
    ],
)
def test_the_seed_examples_are_different_targets(change: dict[str, Any], why: str) -> None:
    assert fingerprint(mailbox_target(**change)) != fingerprint(mailbox_target()), why


@pytest.mark.parametrize(
    ("pinned", "why"),
    [
        ((7, 12, 2), "a mailbox delete approved before new mail arrived (UIDNEXT) does not cover it after"),
        ((7, 11, 3), "nor after mail left it (message count)"),
    ],
)
def test_a_mailbox_delete_is_pinned_to_the_mailbox_state(pinned: tuple[int, ...], why: str) -> None:
    def delete(version: tuple[int, ...]) -> Target:
        return Target("delete_mailbox", "u@h", (Scope("mailbox", "Old", version),))

    assert fingerprint(delete(pinned)) != fingerprint(delete((7, 11, 2))), why


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
    target = mailbox_target("copy", source_version=(1,), destination_version=(2,))
    token = sealer([OLD], now=NOW + 120).seal(claim_for(target), None)
    with pytest.raises(SealExpired):
        sealer([OLD]).verify(token, claim_for(target), None)


def changed_targets(target: Target) -> st.SearchStrategy[Target]:
    """Every way a target can differ: widened, narrowed or swapped items; a scope's value or version changed,
    a scope added or dropped, two scopes' values swapped; another operation or account; the content digest."""
    items, scopes = target.items, target.scopes

    def with_scopes(changed: tuple[Scope, ...]) -> Target:
        return dataclasses.replace(target, scopes=changed)

    def replaced(position: int, **change: Any) -> Target:
        return with_scopes(
            tuple(dataclasses.replace(s, **change) if i == position else s for i, s in enumerate(scopes))
        )

    positions = st.integers(min_value=0, max_value=len(scopes) - 1) if scopes else st.nothing()
    variants = [
        st.integers(min_value=1, max_value=2**32 - 1).map(lambda u: dataclasses.replace(target, items=(*items, u))),
        st.just(dataclasses.replace(target, items=items[:-1])) if items else st.nothing(),
        st.integers(min_value=1, max_value=2**32 - 1).map(lambda u: dataclasses.replace(target, items=(u,))),
        st.tuples(positions, names).map(lambda pv: replaced(pv[0], value=pv[1])),
        st.tuples(positions, versions).map(lambda pv: replaced(pv[0], version=pv[1])),
        positions.map(lambda p: with_scopes(scopes[:p] + scopes[p + 1 :])),
        scopes_to_add(target).map(lambda extra: with_scopes((*scopes, extra))),
        st.just(replaced(0, value=scopes[1].value)) if len(scopes) > 1 else st.nothing(),
        operations.map(lambda op: dataclasses.replace(target, operation=op)),
        st.text(min_size=1, max_size=30).map(lambda a: dataclasses.replace(target, account=a)),
        st.text(min_size=1, max_size=64).map(lambda v: dataclasses.replace(target, content=v)),
        st.just(dataclasses.replace(target, content=None)),
    ]
    return st.one_of(variants).filter(lambda other: fingerprint(other) != fingerprint(target))


def scopes_to_add(target: Target) -> st.SearchStrategy[Scope]:
    taken = {scope.name for scope in target.scopes}
    return scopes.filter(lambda scope: scope.name not in taken)


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
        target = mailbox_target(
            approved, source_version=(1,), destination="Trash", destination_version=(2,), items=(1, 2)
        )
        token = s.seal(claim_for(target), None)
        with pytest.raises(WrongTarget):
            s.verify(token, claim_for(dataclasses.replace(target, operation=attempted)), None)


def test_a_seal_for_another_question_is_wrong_target() -> None:
    target = mailbox_target("move", source_version=(1,), destination_version=(2,))
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
    target = mailbox_target("trash", source_version=(1,), destination="Trash", destination_version=(2,), items=(4,))
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
    target = mailbox_target("move", source_version=(1,), destination_version=(2,))
    token = sealer(sealing_ring).seal(claim_for(target), None)
    sealer(opening_ring).verify(token, claim_for(target), None)


def test_a_retired_key_no_longer_opens() -> None:
    target = mailbox_target("move", source_version=(1,), destination_version=(2,))
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
    target = mailbox_target("copy", source_version=(1,), destination_version=(2,))
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


def test_sealing_speaks_no_imap() -> None:
    """No name in sealing/ (field, argument, variable, attribute) is an IMAP word: a target fits any change."""
    import ast
    from pathlib import Path

    import imap_mcp.sealing

    imap_words = ("uid", "mailbox", "imap", "smtp", "folder")
    for path in Path(imap_mcp.sealing.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            name = getattr(node, "id", None) or getattr(node, "attr", None) or getattr(node, "arg", None)
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                name = node.name
            assert not (name and any(word in name.lower() for word in imap_words)), (path.name, name)


def test_what_a_claim_pinned_travels_with_the_seal_and_an_older_seal_pins_nothing() -> None:
    target = mailbox_target()
    pinned = dataclasses.replace(claim_for(target), pinned="key:7:1:3,9")
    seal = sealer([OLD])
    assert seal.open(seal.seal(pinned, None), None).claim == pinned
    assert seal.open(seal.seal(claim_for(target), None), None).claim.pinned == ""
