"""How fast the `imap-mcp` command answers: `--version`, `--help` of the commands, and `imap-mcp stdio`'s first answer.

    .venv/bin/python bench/cli_start.py [--runs 15] [--before /path/to/another/bin/imap-mcp]

Whole processes, timed from outside with `time.perf_counter`: from the spawn until the process has
exited (`--version`, `--help`), or, for `stdio`, until the first line of its answer to `initialize`
(the process is then stopped, unmeasured). Interleaved rounds: one unmeasured warm-up per side, then
`--runs` rounds of one run per side, the order turned round every round, so that a machine whose
load moves between blocks of runs moves every side alike. Sides:

- `python -c pass` (the same interpreter): what starting Python costs, the floor of any command;
- imap-mcp: the `imap-mcp` installed next to this interpreter;
- before (with `--before`): another `imap-mcp`, e.g. one installed from an older checkout, so that a
  before/after table comes from one run;
- for `stdio`, the bare SDK: an `MCPServer` with one tool and none of imap-mcp's code, over stdio,
  answering the same `initialize`: what any server on this SDK pays to start.

`stdio` is started with a mailbox setting it never connects to (it connects on the first tool call).
Prints markdown tables: each side's median and min-max in ms, and the median of the per-round ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

#: the commands timed until they exit
COMMANDS = (("--version",), ("--help",), ("serve", "--help"), ("webhook", "set", "--help"), ("watch", "--help"))
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}
BARE_SDK_SERVER = """\
from mcp.server.mcpserver import MCPServer

mcp = MCPServer("bare", log_level="WARNING")


@mcp.tool()
def ping() -> str:
    return "pong"


mcp.run("stdio")
"""

Run = Callable[[], float]


def command_env(state: Path) -> dict[str, str]:
    """The environment without any mailbox setting of the caller's, plus one `stdio` never connects to."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("IMAP_", "SMTP_", "ELICITATION"))}
    mailbox = {"IMAP_HOST": "127.0.0.1", "IMAP_PORT": "9", "IMAP_TLS": "none", "IMAP_USERNAME": "bench"}
    return {**base, **mailbox, "IMAP_PASSWORD": "unused", "XDG_STATE_HOME": str(state)}


def until_exit(argv: list[str], env: dict[str, str]) -> Run:
    def run() -> float:
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True, check=False)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-500:]}")
        return seconds

    return run


def until_first_answer(argv: list[str], env: dict[str, str]) -> Run:
    """Spawn a stdio server, send `initialize`, and time until the first line of its answer."""
    request = (json.dumps(INITIALIZE) + "\n").encode()

    def run() -> float:
        started = time.perf_counter()
        process = subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(request)
        process.stdin.flush()
        line = process.stdout.readline()
        seconds = time.perf_counter() - started
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if "result" not in json.loads(line or b"{}"):
            raise SystemExit(f"{' '.join(argv)} did not answer initialize: {line[:300]!r}")
        return seconds

    return run


def rounds(sides: dict[str, Run], runs: int) -> dict[str, list[float]]:
    """One unmeasured warm-up per side, then `runs` rounds of one run per side, in turned-round order."""
    for run in sides.values():
        run()
    names = list(sides)
    times: dict[str, list[float]] = {name: [] for name in names}
    for number in range(runs):
        for name in names if number % 2 == 0 else reversed(names):
            times[name].append(sides[name]())
    return times


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"


def ratio(times: dict[str, list[float]], side: str, base: str) -> str:
    return f"{statistics.median(a / b for a, b in zip(times[side], times[base], strict=True)):.2f}x"


def table(title: str, rows: dict[str, dict[str, list[float]]], base: str) -> str:
    sides = list(next(iter(rows.values())))
    others = [side for side in sides if side != base]
    head = f"| {title} | " + " | ".join(f"{side}, ms" for side in sides)
    head += " | " + " | ".join(f"{side} / {base}" for side in others) + " |"
    lines = [head, "|" + "---|" * (1 + len(sides) + len(others))]
    for what, times in rows.items():
        cells = [ms(times[side]) for side in sides] + [ratio(times, side, base) for side in others]
        lines.append(f"| {what} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="measured rounds per row")
    parser.add_argument("--before", type=Path, help="another imap-mcp command, for a before/after table")
    args = parser.parse_args()
    imap_mcp = Path(sys.executable).with_name("imap-mcp")
    commands = {"imap-mcp": str(imap_mcp), **({"before": str(args.before)} if args.before else {})}
    with tempfile.TemporaryDirectory(prefix="cli-start-") as folder:
        env = command_env(Path(folder))
        floor = until_exit([sys.executable, "-c", "pass"], env)
        quick: dict[str, dict[str, list[float]]] = {}
        for words in COMMANDS:
            sides = {"python -c pass": floor}
            sides.update({name: until_exit([path, *words], env) for name, path in commands.items()})
            quick[f"`imap-mcp {' '.join(words)}`"] = rounds(sides, args.runs)
        bare = Path(folder) / "bare_sdk_server.py"
        bare.write_text(BARE_SDK_SERVER)
        served = {"bare SDK server": until_first_answer([sys.executable, str(bare)], env)}
        served.update({name: until_first_answer([path, "stdio"], env) for name, path in commands.items()})
        first = {"spawn to the answer to `initialize`": rounds(served, args.runs)}
    print(f"{args.runs} interleaved rounds per row; median (min-max) ms, and the median of per-round ratios\n")
    print(table("command", quick, "python -c pass"))
    print()
    print(table("stdio", first, "bare SDK server"))


if __name__ == "__main__":
    main()
