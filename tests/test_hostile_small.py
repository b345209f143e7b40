"""Small ways a caller or a deployment could get more than it should (issue #11, item 6, this part):
clock skew between replicas, a ticked box spelled other than JSON `true`, a world-readable TLS key.
"""

from __future__ import annotations

import stat

import pytest
from harness import Account, Person, error_text, message_ids, served, start_dovecot, structured
from mcp import Client
from mcp.types import ElicitResult, InputRequiredResult, InputResponses

from imap_mcp.protocol import Guard
from imap_mcp.sealing import KeyRing

KEY = "s" * 40
NOW = 1_900_000_000.0


def replica(account: Account, now: float) -> Client:
    """A 2026-07-28 client (a person answering) of one replica of a deployment sharing KEY, whose clock reads `now`."""
    guard = Guard(KeyRing([KEY]), elicitation=True, clock=lambda: now)
    return served(account, guard=guard, mode="2026-07-28", elicitation_callback=Person())


@pytest.mark.anyio
async def test_an_answer_given_on_a_replica_two_seconds_ahead_runs_on_one_behind(account: Account) -> None:
    [first, *_] = message_ids(account, "INBOX")
    args = {"ids": [first], "permanent": True}
    async with replica(account, NOW + 2) as ahead:
        asked = await ahead.session.call_tool("delete_messages", args, allow_input_required=True)
    assert isinstance(asked, InputRequiredResult)
    yes: InputResponses = {"approval": ElicitResult(action="accept", content={"approve": True})}
    async with replica(account, NOW) as behind:
        done = await behind.session.call_tool(
            "delete_messages", args, allow_input_required=True, input_responses=yes, request_state=asked.request_state
        )
    assert not isinstance(done, InputRequiredResult), "asked again: the 2 s of clock skew made the answer not count"
    assert structured(done)["count"] == 1
    assert first not in message_ids(account, "INBOX")


class Answer:
    """An elicitation callback that accepts with `approve` set to `value` (of any JSON type)."""

    def __init__(self, value: object) -> None:
        self.value = value

    async def __call__(self, context: object, params: object) -> ElicitResult:
        return ElicitResult(action="accept", content={"approve": self.value})  # type: ignore[dict-item]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("value", ["yes", "true", 1, "1"], ids=repr)
async def test_only_json_true_is_a_ticked_box_in_both_eras(account: Account, mode: str, value: object) -> None:
    [first, *_] = message_ids(account, "INBOX")
    async with served(account, mode=mode, elicitation_callback=Answer(value)) as client:
        result = await client.call_tool("delete_messages", {"ids": [first], "permanent": True})
    assert "without ticking the approval box: nothing was changed" in error_text(result)
    assert first in message_ids(account, "INBOX")


def test_the_test_and_demo_dovecot_keep_their_tls_key_private() -> None:
    instance = start_dovecot()
    try:
        key = instance.dir / "tls" / "key.pem"
        mode = stat.S_IMODE(key.stat().st_mode)
        assert mode & (stat.S_IRWXG | stat.S_IRWXO) == 0, oct(mode)
        assert instance.cert_file.exists()
    finally:
        instance.stop()
