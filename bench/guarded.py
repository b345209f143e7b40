"""A guarded change in few round trips: the question and the approved answer of one move, against raw imapclient.

    .venv/bin/python bench/guarded.py [--count 2000] [--runs 15] [--no-pause]

Starts its own Dovecot (on /dev/shm when there is one) with `--count` messages in INBOX
(`changing.populate`), and a logging proxy (`tests/command_log.py`) in front of its plain-text
port for each side, so every side pays the same extra hop and every command it sends is counted.
Then one unmeasured warm-up round and `--runs` interleaved rounds (who goes first turns every
round); in each, every side moves one message of its own from INBOX to Archive:

- imap-mcp: `imap-mcp stdio` (IMAP_TLS=none to its proxy), driven by the SDK `Client` in mode
  2026-07-28 with an elicitation callback that approves, so per-call times are those of a client
  of the stdio process, as in `run.py` and `changing.py`. Round 1, the question: `move_messages`
  called with `allow_input_required`, timed until the `InputRequiredResult`. Round 2, the approved
  answer: the same call with the approval (`input_responses`, `request_state`), timed until the
  move is done. The proxy's log is taken after each round: that round's IMAP commands. Two such
  processes take part: one keeps its approval ledger (IMAP_MCP_STORE, SQLite) in the temporary
  folder (/tmp: disk here, as a state folder is), the other on /dev/shm (tmpfs), which shows what
  the ledger's commits cost.
- the baseline: raw imapclient on one logged-in connection sending, for each round, the commands
  imap-mcp sent in that round of the warm-up, by name, for the same mailboxes and one UID
  (EXAMINE and SELECT INBOX, `UID FETCH n (UID)`, the question's second `UID FETCH n (INTERNALDATE RFC822.SIZE
  FLAGS BODYSTRUCTURE)`, `STATUS Archive (UIDVALIDITY UIDNEXT)`,
  `UID MOVE n Archive`, UNSELECT, NOOP; its proxy checks it sent exactly those), plus one SDK trivial call
  (as in `changing.py`: a `get_message` imap-mcp refuses before any IMAP, over the first stdio
  client; its proxy checks it sent no command): the IMAP commands alone, plus what any MCP call costs.

Also the approval ledger alone (`begin`, then `advance` to done, on each imap-mcp's store, timed
in this process every round), and, counted but not timed, round 1 and round 2 of a copy, a
delete to Trash and a permanent delete of one message, each answered at once and (unless
`--no-pause`) a little longer than the pool's `check_after` after the question, as a person
reading the dialog takes. Prints markdown tables.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import inspect
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from imapclient import IMAPClient
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(ROOT / "tests"))

from changing import per_round, populate, timed  # noqa: E402
from command_log import Command, CommandLog, names  # noqa: E402
from harness import Person, answer, ask  # noqa: E402
from run import CACHE_FIELDS, PASSWORD, USER, server_params  # noqa: E402

from imap_mcp.server.changes.facts import FACT_ITEMS  # noqa: E402
from imap_mcp.server.demo.dovecot import Dovecot  # noqa: E402
from imap_mcp.server.imap.message_ids import MessageRef  # noqa: E402
from imap_mcp.server.imap.pool import ImapPool  # noqa: E402
from imap_mcp.server.store.ledger import approval_key, ledger_at, running_lifetime  # noqa: E402

SOURCE, DESTINATION = "INBOX", "Archive"
FACTS_FETCH = "UID FETCH (the question's facts)"
MINE, MINE_MEMORY = "imap-mcp", "imap-mcp, ledger on tmpfs"
RAW, TRIVIAL, LEDGER = "raw imapclient, same commands", "SDK trivial call", "approval ledger"
#: where the second imap-mcp keeps its approval ledger: memory (tmpfs), so its commits wait for no disk
MEMORY = "/dev/shm"
QUESTION, ANSWER = "round 1: the question", "round 2: the approved answer"
#: the guarded changes counted (tool, arguments besides the ids)
CHANGES: dict[str, tuple[str, dict[str, Any]]] = {
    "move": ("move_messages", {"destination": DESTINATION}),
    "copy": ("move_messages", {"destination": DESTINATION, "mode": "copy"}),
    "delete to Trash": ("delete_messages", {}),
    "delete permanently": ("delete_messages", {"permanent": True}),
}
#: longer than the pool's `check_after`: a connection idle that long gets a NOOP before it is used again
PAUSE = float(inspect.signature(ImapPool.__init__).parameters["check_after"].default) + 1.0


@dataclass
class Rounds:
    """One guarded change's two rounds as imap-mcp sent them: the commands of each."""

    question: list[Command]
    answer: list[Command]


@dataclass
class Mine:
    """A running `imap-mcp stdio` behind its own logging proxy, driven by the SDK client."""

    client: Client
    log: CommandLog
    uidvalidity: int
    store_url: str  #: its approval ledger's store

    def arguments(self, change: str, uid: int) -> tuple[str, dict[str, Any]]:
        tool, arguments = CHANGES[change]
        return tool, {**arguments, "ids": [MessageRef(SOURCE, self.uidvalidity, uid).id]}

    async def question(self, change: str, uid: int) -> tuple[float, str | None, list[Command]]:
        """Round 1: ms until the question, the approval's request state, and the round's commands."""
        tool, arguments = self.arguments(change, uid)
        self.log.take()
        start = time.perf_counter()
        asked = await ask(self.client, tool, arguments)
        elapsed = (time.perf_counter() - start) * 1000
        return elapsed, asked.request_state, self.log.take()

    async def answer(self, change: str, uid: int, state: str | None) -> tuple[float, list[Command]]:
        """Round 2: ms until the approved change is done, and the round's commands."""
        tool, arguments = self.arguments(change, uid)
        self.log.take()
        start = time.perf_counter()
        result = await answer(self.client, tool, arguments, state)
        elapsed = (time.perf_counter() - start) * 1000
        assert not result.is_error and result.structured_content["status"] == "done", result.content  # type: ignore[union-attr]
        return elapsed, self.log.take()

    async def trivial(self) -> float:
        """The SDK trivial call: a tool call imap-mcp refuses before any IMAP (it must send no command)."""
        self.log.take()
        start = time.perf_counter()
        result = await self.client.call_tool("get_message", {"id": "imap.not-an-id"})
        elapsed = (time.perf_counter() - start) * 1000
        assert result.is_error and not self.log.take(), "the trivial call touched IMAP"
        return elapsed

    async def counted(self, change: str, uid: int, pause: float = 0.0) -> Rounds:
        """Both rounds of `change` of `uid`, the answer given `pause` seconds after the question."""
        _, state, question = await self.question(change, uid)
        await anyio.sleep(pause)
        _, done = await self.answer(change, uid, state)
        return Rounds(question, done)


class Raw:
    """One imapclient connection, through its own logging proxy, sending imap-mcp's commands of a move by name."""

    def __init__(self, port: int, log: CommandLog) -> None:
        self.client = IMAPClient("127.0.0.1", port, ssl=False, timeout=30)
        self.client.login(USER, PASSWORD)
        self.log = log

    def actions(self, uid: int) -> dict[str, Callable[[], object]]:
        """Each command a move's rounds send, by name, for `uid`."""
        client = self.client
        return {
            "NOOP": client.noop,
            "EXAMINE": lambda: client.select_folder(SOURCE, readonly=True),
            "UID SEARCH": lambda: client.search(["UID", str(uid)]),
            "UID FETCH": lambda: client.fetch([uid], ["UID"]),
            # a question's second FETCH: what the dialog shows of the message (`changes.facts`)
            FACTS_FETCH: lambda: client.fetch([uid], list(FACT_ITEMS)),
            "STATUS": lambda: client.folder_status(DESTINATION, [b"UIDVALIDITY", b"UIDNEXT"]),
            "SELECT": lambda: client.select_folder(SOURCE),
            "UID MOVE": lambda: client.move([uid], DESTINATION),
            "UNSELECT": client.unselect_folder,
        }

    def send(self, script: list[str], uid: int) -> float:
        """ms to send `script` (command names) for `uid`; the proxy checks exactly those went out."""
        actions = self.actions(uid)
        unknown = [name for name in script if name not in actions]
        if unknown:
            raise SystemExit(f"imap-mcp sent {unknown}, which the raw side cannot replay: teach Raw.actions")
        # the first UID FETCH of a round asks which UIDs exist; a second one, the facts a question shows
        fetches = [n for n, name in enumerate(script) if name == "UID FETCH"]
        calls = [actions[FACTS_FETCH if n in fetches[1:] else name] for n, name in enumerate(script)]
        self.log.take()
        elapsed = timed(lambda: [call() for call in calls])
        assert names(self.log.take()) == script, "raw imapclient sent other commands than the script"
        return elapsed


@dataclass
class Measured:
    times: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    #: imap-mcp's commands of the move, per round and side (the warm-up's first)
    commands: list[Rounds] = field(default_factory=list)

    def add(self, phase: str, side: str, ms: float) -> None:
        self.times.setdefault(phase, {}).setdefault(side, []).append(ms)


def ledger_round(url: str) -> float:
    """ms for the approval ledger's part of an approved change: `begin`, then `advance` to done."""
    ledger = ledger_at(url)
    key = approval_key("bench@127.0.0.1:0", "move_messages", uuid.uuid4().hex)
    start = time.perf_counter()
    begun = ledger.begin(key, "bench@127.0.0.1:0", "move_messages", running_lifetime(30.0), None)
    assert begun.holder is not None
    ledger.advance(key, begun.holder, "done", {"count": 1})
    return (time.perf_counter() - start) * 1000


async def move_rounds(mines: dict[str, Mine], raw: Raw, uids: list[int], runs: int) -> Measured:
    """One unmeasured warm-up round, then `runs` interleaved rounds of the move (see the module).

    imap-mcp moves the newest of `uids`, raw the oldest. Who goes first turns every round.
    """
    measured = Measured()
    trivial = mines[MINE].trivial
    for mine in mines.values():
        measured.commands.append(await mine.counted("move", uids.pop()))
    scripts = {QUESTION: names(measured.commands[0].question), ANSWER: names(measured.commands[0].answer)}
    raw_uid = uids.pop(0)
    for phase in (QUESTION, ANSWER):
        raw.send(scripts[phase], raw_uid)
        await trivial()
    sides = [*mines, RAW]
    for round_ in range(runs):
        order = sides[round_ % len(sides) :] + sides[: round_ % len(sides)]
        mine_uids = {side: uids.pop() for side in mines}
        raw_uid = uids.pop(0)
        states: dict[str, str | None] = {}
        questions: dict[str, list[Command]] = {}
        for side in order:
            if side == RAW:
                measured.add(QUESTION, RAW, raw.send(scripts[QUESTION], raw_uid))
                measured.add(QUESTION, TRIVIAL, await trivial())
            else:
                ms, states[side], questions[side] = await mines[side].question("move", mine_uids[side])
                measured.add(QUESTION, side, ms)
        for side in order:
            if side == RAW:
                measured.add(ANSWER, RAW, raw.send(scripts[ANSWER], raw_uid))
                measured.add(ANSWER, TRIVIAL, await trivial())
            else:
                ms, done = await mines[side].answer("move", mine_uids[side], states[side])
                measured.add(ANSWER, side, ms)
                measured.commands.append(Rounds(questions[side], done))
        for side, mine in mines.items():
            measured.add(LEDGER, side, ledger_round(mine.store_url))
    return measured


async def counted_changes(mine: Mine, uids: list[int], pause: bool) -> dict[str, list[Rounds]]:
    """Per change: its rounds answered at once, and (with `pause`) answered after `PAUSE` seconds."""
    counted: dict[str, list[Rounds]] = {}
    for change in CHANGES:
        counted[change] = [await mine.counted(change, uids.pop())]
        if pause:
            counted[change].append(await mine.counted(change, uids.pop(), PAUSE))
    return counted


def imap_mcp_params(dovecot: Dovecot, port: int, store_url: str) -> StdioServerParameters:
    """`imap-mcp stdio` as `run.server_params` starts it, but in plain text to the proxy at `port`."""
    params = server_params(dovecot)
    assert params.env is not None
    env = {**params.env, "IMAP_TLS": "none", "IMAP_PORT": str(port), "IMAP_MCP_STORE": store_url}
    return params.model_copy(update={"env": env})


@contextlib.asynccontextmanager
async def imap_mcp(dovecot: Dovecot, uidvalidity: int, store_in: str | None) -> AsyncIterator[Mine]:
    """An `imap-mcp stdio` behind a logging proxy of its own, its approval ledger in a new folder under `store_in`,
    its pool's first connection made."""
    with (
        CommandLog(dovecot.port) as log,
        tempfile.TemporaryDirectory(prefix="guarded-store.", dir=store_in) as directory,
    ):
        store_url = f"sqlite:///{Path(directory) / 'store.sqlite'}"
        params = imap_mcp_params(dovecot, log.port, store_url)
        async with Client(params, mode="2026-07-28", elicitation_callback=Person()) as client:
            await client.list_tools()
            await client.call_tool("list_mailboxes", {})  # the login: not part of any round
            yield Mine(client, log, uidvalidity, store_url)


async def measure(dovecot: Dovecot, args: argparse.Namespace) -> tuple[Measured, dict[str, list[Rounds]]]:
    with CommandLog(dovecot.port) as raw_log:
        raw = Raw(raw_log.port, raw_log)
        uidvalidity = int(raw.client.select_folder(SOURCE, readonly=True)[b"UIDVALIDITY"])
        uids = sorted(raw.client.search(["ALL"]))
        needed = 3 * (args.runs + 1) + 2 * len(CHANGES)
        if len(uids) < needed:
            raise SystemExit(f"--count {args.count} is too few: {needed} messages are moved, copied or deleted")
        async with (
            imap_mcp(dovecot, uidvalidity, None) as on_disk,
            imap_mcp(dovecot, uidvalidity, MEMORY) as in_memory,
        ):
            measured = await move_rounds({MINE: on_disk, MINE_MEMORY: in_memory}, raw, uids, args.runs)
            counted = await counted_changes(on_disk, uids, not args.no_pause)
        raw.client.logout()
    return measured, counted


def median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}"


def listed(commands: list[Command]) -> str:
    return f"{len(commands)}: " + ", ".join(f"`{name}`" for name in names(commands))


def same_every_round(rounds: list[list[Command]]) -> str:
    """The commands of a round, as every round sent them; or each distinct list with how many rounds sent it."""
    distinct: dict[tuple[str, ...], int] = {}
    for commands in rounds:
        distinct[tuple(names(commands))] = distinct.get(tuple(names(commands)), 0) + 1
    if len(distinct) == 1:
        return listed(rounds[0])
    return "; ".join(f"{len(n)} in {times} rounds: {', '.join(n)}" for n, times in distinct.items())


def replayed(rounds: list[Rounds]) -> str:
    """Whether raw imapclient sent what imap-mcp sent: it replays the warm-up round's commands every round."""
    warm = (names(rounds[0].question), names(rounds[0].answer))
    differed = sum((names(r.question), names(r.answer)) != warm for r in rounds[1:])
    if not differed:
        return "raw imapclient sent the same commands as imap-mcp in every round (checked by its own proxy's log)."
    return (
        f"imap-mcp's commands differed from its warm-up round's in {differed} of {len(rounds) - 1} rounds (see the "
        "column); raw imapclient sent the warm-up round's every round."
    )


def report(args: argparse.Namespace, measured: Measured, counted: dict[str, list[Rounds]]) -> str:
    question, done, ledger = (measured.times[phase] for phase in (QUESTION, ANSWER, LEDGER))
    both = {side: [q + a for q, a in zip(question[side], done[side], strict=True)] for side in question}
    rounds = measured.commands
    mines = (MINE, MINE_MEMORY)
    lines = [
        f"Measured {dt.date.today().isoformat()}: one message moved from {SOURCE} ({args.count:,} messages) to "
        f"{DESTINATION} per side per round; {args.runs} interleaved rounds after one warm-up; medians in ms; "
        "ratios are the median (min-max) of the per-round ratios. imap-mcp's approval ledger: SQLite in "
        f"{tempfile.gettempdir()}, and for the second imap-mcp in {MEMORY}.",
        "",
        f"| guarded move of one message ({args.runs} interleaved rounds; median ms) | {MINE} | {MINE_MEMORY} "
        f"| {RAW} | {TRIVIAL} | {MINE} / ({RAW} + {TRIVIAL}), per round "
        f"| {MINE_MEMORY} / ({RAW} + {TRIVIAL}), per round | IMAP commands imap-mcp sent, every round |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = (
        (QUESTION, question, same_every_round([r.question for r in rounds])),
        (ANSWER, done, same_every_round([r.answer for r in rounds])),
        ("both rounds", both, str(len(rounds[0].question) + len(rounds[0].answer))),
    )
    for label, times, commands in rows:
        medians = " | ".join(median(times[side]) for side in (*mines, RAW, TRIVIAL))
        ratios = " | ".join(per_round(times[side], times[RAW], times[TRIVIAL]) for side in mines)
        lines.append(f"| {label} | {medians} | {ratios} | {commands} |")
    lines += [
        "",
        replayed(rounds),
        f"The {LEDGER} alone (`Ledger.begin`, then `advance` to done, as round 2 does; timed in this process on "
        f"each imap-mcp's store in every round): median {median(ledger[MINE])} ms in {tempfile.gettempdir()}, "
        f"{median(ledger[MINE_MEMORY])} ms in {MEMORY}.",
        "",
        "| guarded change of one message on Dovecot | round 1 (the question) | round 2, answered at once "
        + ("" if args.no_pause else f"| round 2, answered {PAUSE:g} s later (NOOP before reusing the connection) ")
        + "|",
        "|---|---|---|" + ("" if args.no_pause else "---|"),
    ]
    for change, found in counted.items():
        cells = [listed(found[0].question), *(listed(r.answer) for r in found)]
        lines.append(f"| {change} | " + " | ".join(cells) + " |")
    lines += ["", "imap-mcp's commands of the move's round 2 (quoted strings not shown):", ""]
    lines += [f"    {c.tag} {c.name} {c.arguments}".rstrip() for c in rounds[-1].answer]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=2_000, help="messages in INBOX")
    parser.add_argument("--runs", type=int, default=15, help="interleaved rounds of the move")
    parser.add_argument(
        "--no-pause", action="store_true", help=f"skip the rounds answered {PAUSE:g} s after the question"
    )
    args = parser.parse_args()
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
    with Dovecot(users={USER: PASSWORD}, extra_config=[CACHE_FIELDS], base=base) as dovecot:
        populate(dovecot, args.count)
        measured, counted = anyio.run(measure, dovecot, args)
    print(report(args, measured, counted))


if __name__ == "__main__":
    main()
