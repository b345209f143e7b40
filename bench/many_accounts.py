"""Benchmark: one deployment for many mailboxes (issue #32): two replicas, two watchers, one Dovecot, one store.

    .venv/bin/python bench/many_accounts.py [--accounts 1000] [--callers 200] [--seconds 60] [--rate 20]
                                            [--store postgresql|sqlite] [--seed 10]

Starts, all on loopback and all stopped at the end: a private Dovecot (users t-bench0000…, any password;
each INBOX seeded with --seed messages whose Message-ID names their account), a private PostgreSQL as the
store (or a SQLite file), an accounts file of --accounts accounts (a bearer token each), two `imap-mcp
serve` replicas behind nginx (round robin; a request that cannot reach its replica goes to the other),
two `imap-mcp watch` processes sharing the accounts, and a webhook per account to one receiver on
loopback that verifies every signature. Then:

1. Memory. Each watcher before it holds any account and once the two hold them all, IDLE on every INBOX;
   each replica at start and once every account's app is built (one tools/list per account sent to each
   replica directly: "warm-up", timed).
   The baseline, same run: one mailbox as before this issue, with its own `serve` and `watch --account`
   (its own Dovecot user, not in the fleet's file; its own SQLite store): the memory of each; then
   --baseline-rounds rounds (below, one caller, no load) on it, taken in turns with as many on the fleet's
   random accounts, both through nginx. The replica of one account also gives one more idle account's cost.
2. Load. --callers concurrent callers for --seconds, each round on a random account no other caller is on:
   search_messages (INBOX, 10 newest), get_message of one of them, move_messages of it to Archive with the
   dialog answered yes (2026-07-28, SDK client, through nginx; only a seeded message is moved: one that
   arrived stays, for the webhook census). Meanwhile mail arrives at --rate messages a
   second, each in a random INBOX (IMAP APPEND on Dovecot's plain port, as a delivery agent's). Halfway
   through, one watcher and one replica are killed (SIGKILL); a call that failed because its replica died
   is made again once by its caller (counted apart).
3. Census. Once every message that arrived was delivered (or 180 s passed): the webhooks (every arrived
   message delivered once, with one webhook-id; a webhook-id received twice is a resend, counted apart) and
   every mailbox (each account holds exactly its own seeded and arrived messages, once each, and every
   message a move reported done is in its Archive).

Prints the markdown of bench/README.md's table, and the raw figures.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
from imapclient import IMAPClient
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitRequestParams, ElicitResult

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "webhooks"))

from harness import ANY_USER_PASSWORD, http_server, start_dovecot  # noqa: E402
from load_balancer import round_robin  # noqa: E402
from postgres import PrivatePostgres  # noqa: E402
from receiver import Receiver  # noqa: E402

from imap_mcp.server.demo.dovecot import Dovecot  # noqa: E402
from imap_mcp.server.serving.built import DEFAULT_MAX_BUILT  # noqa: E402
from imap_mcp.server.store.database import Store  # noqa: E402
from imap_mcp.server.webhooks.cipher import StoreCipher  # noqa: E402
from imap_mcp.server.webhooks.rows import save_endpoint  # noqa: E402

SEAL_KEYS = "bench-seal-key-" + "x" * 40
DOMAIN = "bench.example"
#: Dovecot for thousands of connections: each imap process serves several, logins in long-lived processes.
#: client_limit counts only with service_count other than 1 (Dovecot's default for imap): with 1, each connection
#: has a process of its own and the 1,000 fleet IDLEs took every process, so the next login waited forever
DOVECOT_SCALE = [
    "service imap {\n  service_count = 0\n  client_limit = 10\n  process_limit = 1000\n}",
    "service imap-login {\n  service_count = 0\n  process_min_avail = 2\n  process_limit = 8\n  client_limit = 4000\n}",
    "default_client_limit = 12000",
    "default_vsz_limit = 0",
]


@dataclass(frozen=True)
class Mailbox:
    name: str  #: the account's name in the accounts file
    username: str
    token: str


def kill_running(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def seed_message(box: Mailbox, k: int) -> bytes:
    return (
        f"From: Seed Sender <seed@example.org>\r\nTo: {box.username}@{DOMAIN}\r\nSubject: seed {k} of {box.name}\r\n"
        f"Date: Mon, 30 Nov 2026 10:00:00 +0000\r\nMessage-ID: <seed-{k}.{box.name}@{DOMAIN}>\r\n\r\n"
        f"Seeded message {k}.\r\n"
    ).encode()


def arriving_message(box: Mailbox, n: int) -> bytes:
    return (
        f"From: Arriving Sender <new@example.org>\r\nTo: {box.username}@{DOMAIN}\r\nSubject: arrive {n} for "
        f"{box.name}\r\nDate: Tue, 01 Dec 2026 10:00:00 +0000\r\nMessage-ID: <arrive-{n}.{box.name}@{DOMAIN}>\r\n\r\n"
        "New mail.\r\n"
    ).encode()


def plain_login(dovecot: Dovecot, box: Mailbox) -> IMAPClient:
    client = IMAPClient("127.0.0.1", dovecot.port, ssl=False, timeout=60)
    client.login(box.username, ANY_USER_PASSWORD)
    return client


def seed(dovecot: Dovecot, box: Mailbox, count: int) -> None:
    client = plain_login(dovecot, box)
    try:
        if not client.folder_exists("Archive"):
            client.create_folder("Archive")
        for k in range(count):
            client.append("INBOX", seed_message(box, k))
    finally:
        client.logout()


def write_accounts(path: Path, boxes: list[Mailbox]) -> None:
    path.write_text(
        "".join(f'[accounts.{b.name}]\nauth_tokens = ["{b.token}"]\nIMAP_USERNAME = "{b.username}"\n' for b in boxes)
    )
    path.chmod(0o600)


def environment(dovecot: Dovecot, accounts_file: Path, store_url: str, store_key: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IMAP_", "SMTP_"))}
    env.update(
        IMAP_HOST="127.0.0.1",
        IMAP_PORT=str(dovecot.tls_port),
        IMAP_TLS="implicit",
        IMAP_CA_FILE=str(dovecot.cert_file),
        IMAP_PASSWORD=ANY_USER_PASSWORD,
        IMAP_MCP_ACCOUNTS_FILE=str(accounts_file),
        IMAP_MCP_SEAL_KEYS=SEAL_KEYS,
        IMAP_MCP_STORE=store_url,
        IMAP_MCP_STORE_KEYS=store_key,
        IMAP_MCP_LEGACY_HTTP="stateless",
    )
    return env


def identity(dovecot: Dovecot, box: Mailbox) -> str:
    return f"{box.username}@127.0.0.1:{dovecot.tls_port}"


def leases_by_pid(store: Store) -> Counter[str]:
    with store.transaction() as tx:
        found = tx.all("SELECT holder FROM watcher_leases WHERE expires_at > ?", time.time())
    return Counter(str(holder).split(":")[1] for (holder,) in found)


def marks(store: Store) -> int:
    with store.transaction() as tx:
        found = tx.one("SELECT COUNT(*) FROM mailbox_marks")
    return int(found[0]) if found else 0


def wait_until(what: str, done: Any, timeout: float, every: float = 0.2, required: bool = True) -> float:
    """Seconds until `done()` was true; after `timeout`, SystemExit naming `what` (or, if not `required`, the
    seconds waited: the census then counts what is missing)."""
    started = time.monotonic()
    while not done():
        if time.monotonic() - started > timeout:
            if not required:
                return time.monotonic() - started
            raise SystemExit(f"many_accounts: {what} did not happen within {timeout} s")
        time.sleep(every)
    return time.monotonic() - started


def start_watcher(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "imap_mcp.server", "watch"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
        )


async def say_yes(context: object, params: ElicitRequestParams) -> ElicitResult:
    """A person who ticks every box of the dialog and accepts."""
    schema: dict[str, Any] = getattr(params, "requested_schema", None) or {}
    properties: dict[str, dict[str, Any]] = schema.get("properties", {})
    content: dict[str, str | int | float | bool | list[str] | None] = {
        name: True for name, prop in properties.items() if prop.get("type") == "boolean"
    }
    return ElicitResult(action="accept", content=content)


def tools_list(url: str, token: str) -> int:
    version = "2026-07-28"
    meta = {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": version,
        "mcp-method": "tools/list",
        "authorization": f"Bearer {token}",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    return httpx.post(url, headers=headers, json=body, timeout=120).status_code


@dataclass
class Load:
    """What the callers saw."""

    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)  #: (account name, subject) of each move done
    #: (account name, subject) of each move whose replica was killed before it answered, refused when made again
    moved_unanswered: list[tuple[str, str]] = field(default_factory=list)
    rounds: int = 0


async def one_round(client: Client, box: Mailbox, load: Load) -> None:
    async def call(tool: str, args: dict[str, Any]) -> Any:
        for attempt in (1, 2):
            started = time.perf_counter()
            try:
                result = await client.call_tool(tool, args)
            except Exception as exc:  # the transport failed (its replica was killed): a caller tries once more
                if attempt == 1:
                    load.retried.append(f"{tool}: {type(exc).__name__}")
                    continue
                load.errors.append(f"{tool}: {type(exc).__name__}: {exc}"[:300])
                return None
            load.latencies[tool].append(time.perf_counter() - started)
            if result.is_error and attempt == 2 and tool == "move_messages":
                # the killed replica may have moved it before it could answer: then the call made again finds the
                # message gone from INBOX; the census counts it an error unless it is in Archive once
                load.moved_unanswered.append((box.name, picked["subject"]))
                return None
            if result.is_error:
                load.errors.append(f"{tool}: {str(result.content[0])[:300]}")
                return None
            return result.structured_content
        return None

    found = await call("search_messages", {"mailbox": "INBOX", "limit": 10})
    load.rounds += 1
    if not found or not found.get("messages"):
        return
    picked = random.choice(found["messages"])
    if await call("get_message", {"id": picked["id"], "max_chars": 2000}) is None:
        return
    if not picked["subject"].startswith("seed "):
        # mail that arrived stays in INBOX: moved before its watcher looked (a watcher's accounts wait for their
        # lease to run out when it dies), it would never be an event, and the census would count it lost
        return
    moved = await call("move_messages", {"ids": [picked["id"]], "destination": "Archive"})
    if moved is not None and moved.get("status") == "done":
        load.moved.append((box.name, picked["subject"]))


async def run_callers(url: str, boxes: list[Mailbox], callers: int, seconds: float, load: Load) -> None:
    deadline = time.monotonic() + seconds
    busy: set[str] = set()

    async def caller() -> None:
        async with (
            httpx2.AsyncClient(timeout=120) as http,
            Client(
                streamable_http_client(url, http_client=http), mode="2026-07-28", elicitation_callback=say_yes
            ) as client,
        ):
            while time.monotonic() < deadline:
                box = random.choice(boxes)
                if box.name in busy:
                    continue
                busy.add(box.name)
                try:
                    http.headers["authorization"] = f"Bearer {box.token}"
                    await one_round(client, box, load)
                finally:
                    busy.discard(box.name)

    async with anyio.create_task_group() as group:
        for _ in range(callers):
            group.start_soon(caller)


class Arrivals:
    """Mail arriving at `rate` a second in random INBOXes, until stopped; when each one was in its INBOX."""

    def __init__(self, dovecot: Dovecot, boxes: list[Mailbox], rate: float) -> None:
        self.dovecot, self.boxes, self.rate = dovecot, boxes, rate
        self.appended: dict[int, tuple[str, float]] = {}  #: n → (account name, when APPEND was answered)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        due, n = time.monotonic(), 0
        while not self.stop.is_set():
            box = random.choice(self.boxes)
            client = plain_login(self.dovecot, box)
            try:
                client.append("INBOX", arriving_message(box, n))
            finally:
                client.logout()
            self.appended[n] = (box.name, time.time())
            n += 1
            due += 1 / self.rate
            self.stop.wait(max(0.0, due - time.monotonic()))


def mailbox_census(dovecot: Dovecot, box: Mailbox) -> dict[str, Counter[str]]:
    """The Message-IDs of every mailbox of the account, counted."""
    client = plain_login(dovecot, box)
    found: dict[str, Counter[str]] = {}
    try:
        for flags, _, name in client.list_folders():
            if b"\\Noselect" in flags:
                continue
            client.select_folder(name, readonly=True)
            counted: Counter[str] = Counter()
            uids = client.search(["ALL"])
            if uids:
                for data in client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]).values():
                    header = data[b"BODY[HEADER.FIELDS (MESSAGE-ID)]"].decode()
                    counted[header.split(":", 1)[1].strip()] += 1
            found[str(name)] = counted
    finally:
        client.logout()
    return found


def solo_watcher_rss(env: dict[str, str], dovecot: Dovecot, box: Mailbox, receiver: Receiver, work: Path) -> int:
    """RSS of `imap-mcp watch --account` watching one INBOX (its own SQLite store, so no lease of the fleet's)."""
    store_url = f"sqlite:///{work / 'solo.sqlite3'}"
    solo_store = Store(store_url)
    with solo_store.transaction() as tx:
        path = f"/solo/{box.name}"
        receiver.secrets[path] = save_endpoint(
            tx, StoreCipher([env["IMAP_MCP_STORE_KEYS"]]), identity(dovecot, box), receiver.url(path), None
        )
    with open(work / "solo-watch.log", "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "imap_mcp.server", "watch", "--account", box.name],
            env={**env, "IMAP_MCP_STORE": store_url},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    try:
        wait_until("the solo watcher watching its INBOX", lambda: marks(solo_store) == 1, 120)
        time.sleep(5)  # IDLE entered (a memory reading)
        return rss_kib(process.pid)
    finally:
        process.terminate()
        process.wait(30)


async def interleaved(
    solo_url: str, solo: Mailbox, fleet_url: str, boxes: list[Mailbox], rounds: int, loads: tuple[Load, Load]
) -> None:
    """The baseline, before the load: one caller on one account alone and one on the fleet's random accounts, both
    through nginx, taking turns round by round (which goes first swaps each round), so that both see the same VM."""
    alone, fleet = loads
    async with (
        httpx2.AsyncClient(timeout=120, headers={"authorization": f"Bearer {solo.token}"}) as solo_http,
        httpx2.AsyncClient(timeout=120) as fleet_http,
        Client(
            streamable_http_client(solo_url, http_client=solo_http), mode="2026-07-28", elicitation_callback=say_yes
        ) as on_solo,
        Client(
            streamable_http_client(fleet_url, http_client=fleet_http), mode="2026-07-28", elicitation_callback=say_yes
        ) as on_fleet,
    ):
        for k in range(rounds):
            box = random.choice(boxes)
            fleet_http.headers["authorization"] = f"Bearer {box.token}"
            turns = [(on_solo, solo, alone), (on_fleet, box, fleet)]
            for client, mailbox, load in turns if k % 2 == 0 else reversed(turns):
                await one_round(client, mailbox, load)


def latencies(load: Load) -> dict[str, dict[str, int]]:
    """Per tool: calls, p50 and p99 in ms."""
    return {
        tool: {
            "calls": len(v),
            "p50_ms": round(statistics.median(v) * 1000),
            "p99_ms": round(percentile(v, 0.99) * 1000),
        }
        for tool, v in sorted(load.latencies.items())
    }


def spread(tool: dict[str, int] | None) -> str:
    return f"{tool['p50_ms']} / {tool['p99_ms']} ms" if tool else "-"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))] if ordered else float("nan")


@contextlib.contextmanager
def store_of(kind: str, work: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{work / 'store.sqlite3'}"
        return
    cluster = PrivatePostgres()
    cluster.start()
    try:
        yield cluster.new_database()
    finally:
        cluster.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--accounts", type=int, default=1000)
    parser.add_argument("--callers", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=20.0, help="messages arriving per second, in all")
    parser.add_argument("--seed", type=int, default=10, help="messages in each INBOX at the start")
    parser.add_argument(
        "--baseline-rounds", type=int, default=30, help="rounds on one account alone, and on the fleet, before the load"
    )
    parser.add_argument("--store", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument(
        "--max-built", type=int, default=None, help="IMAP_MCP_MAX_BUILT_ACCOUNTS of the replicas (default: theirs)"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="many-accounts."))
    figures: dict[str, Any] = {
        "accounts": args.accounts,
        "callers": args.callers,
        "seconds": args.seconds,
        "max_built": args.max_built or DEFAULT_MAX_BUILT,
    }
    boxes = [
        Mailbox(f"u{i:04d}", f"t-bench{i:04d}", f"tok-u{i:04d}-{secrets.token_hex(12)}") for i in range(args.accounts)
    ]
    by_name = {b.name: b for b in boxes}
    solo = Mailbox("solo", "t-benchsolo", f"tok-solo-{secrets.token_hex(12)}")
    dovecot = start_dovecot(extra_config=DOVECOT_SCALE)
    watchers: list[subprocess.Popen[bytes]] = []
    try:
        started = time.monotonic()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda b: seed(dovecot, b, args.seed), boxes))
        seed(dovecot, solo, args.seed + args.baseline_rounds)  # a message to move in each of its rounds
        figures["seeding_s"] = round(time.monotonic() - started, 1)
        print(f"seeded {len(boxes)} INBOXes with {args.seed} messages in {figures['seeding_s']} s", flush=True)
        accounts_file = work / "accounts.toml"
        write_accounts(accounts_file, boxes)
        with contextlib.ExitStack() as stack:
            store_url = stack.enter_context(store_of(args.store, work))
            store_key = secrets.token_urlsafe(32)
            env = environment(dovecot, accounts_file, store_url, store_key)
            if args.max_built is not None:
                env["IMAP_MCP_MAX_BUILT_ACCOUNTS"] = str(args.max_built)
            store = Store(store_url)

            # watchers first, holding nothing: their memory before any account
            watchers += [start_watcher(env, work / f"watch-{n}.log") for n in range(2)]
            stack.callback(kill_running, watchers)
            time.sleep(5)  # settled: imports done, first renewal made (a memory reading, not a wait for a result)
            figures["watcher_rss_idle_kib"] = [rss_kib(w.pid) for w in watchers]
            with Receiver("") as receiver:
                cipher = StoreCipher([store_key])
                with store.transaction() as tx:
                    for box in boxes:
                        path = f"/hooks/{box.name}"
                        secret = save_endpoint(tx, cipher, identity(dovecot, box), receiver.url(path), None)
                        receiver.secrets[path] = secret
                taking = wait_until(
                    "the watchers taking every account", lambda: sum(leases_by_pid(store).values()) == len(boxes), 300
                )
                watching = wait_until("every INBOX watched", lambda: marks(store) == len(boxes), 300)
                figures["watchers_take_all_s"] = round(taking, 1)
                figures["watchers_watch_all_s"] = round(taking + watching, 1)
                time.sleep(5)  # IDLE entered everywhere (a memory reading)
                held = leases_by_pid(store)
                figures["watcher_accounts"] = [held[str(w.pid)] for w in watchers]
                figures["watcher_rss_holding_kib"] = [rss_kib(w.pid) for w in watchers]
                print(f"watchers hold {figures['watcher_accounts']} accounts", flush=True)

                # the baseline: one mailbox as before this issue, a `serve` and a `watch --account` of its own
                solo_file = work / "solo.toml"
                write_accounts(solo_file, [solo])
                solo_env = {**env, "IMAP_MCP_ACCOUNTS_FILE": str(solo_file)}
                figures["watcher_rss_one_account_kib"] = solo_watcher_rss(solo_env, dovecot, solo, receiver, work)
                one: list[subprocess.Popen[bytes]] = []
                solo_url = stack.enter_context(http_server(solo_env, log_path=work / "solo.log", started=one))
                time.sleep(2)
                figures["replica_rss_one_account_kib"] = rss_kib(one[0].pid)
                replicas: list[subprocess.Popen[bytes]] = []
                urls = [
                    stack.enter_context(http_server(env, log_path=work / f"replica-{n}.log", started=replicas))
                    for n in range(2)
                ]
                time.sleep(2)
                figures["replica_rss_start_kib"] = [rss_kib(r.pid) for r in replicas]
                started = time.monotonic()
                with ThreadPoolExecutor(8) as pool:
                    statuses = list(
                        pool.map(lambda pair: tools_list(*pair), [(u, b.token) for u in urls for b in boxes])
                    )
                figures["warm_up_s"] = round(time.monotonic() - started, 1)
                assert set(statuses) == {200}, Counter(statuses)
                figures["replica_rss_warm_kib"] = [rss_kib(r.pid) for r in replicas]
                print(f"replicas warm in {figures['warm_up_s']} s", flush=True)
                ports = [int(u.rsplit(":", 1)[1].split("/")[0]) for u in urls]
                port, access_log = stack.enter_context(round_robin(ports, failover=True))
                balanced = f"http://127.0.0.1:{port}/mcp"
                solo_port, _ = stack.enter_context(round_robin([int(solo_url.rsplit(":", 1)[1].split("/")[0])]))
                alone, quiet = Load(), Load()
                anyio.run(
                    interleaved,
                    f"http://127.0.0.1:{solo_port}/mcp",
                    solo,
                    balanced,
                    boxes,
                    args.baseline_rounds,
                    (alone, quiet),
                )
                figures["baseline"] = {"alone": latencies(alone), "fleet": latencies(quiet)}
                figures["baseline_errors"] = len(alone.errors) + len(quiet.errors)
                print(f"baseline: {args.baseline_rounds} rounds each, interleaved", flush=True)

                # the load, the arrivals, and the kills halfway
                load = Load()
                arrivals = Arrivals(dovecot, boxes, args.rate)
                kill: dict[str, Any] = {}

                def kill_halfway() -> None:
                    time.sleep(args.seconds / 2)
                    victim, survivor = watchers[0], watchers[1]
                    kill["dead_watcher_accounts"] = {a for a, h in _leases(store).items() if h == str(victim.pid)}
                    kill["at"] = time.time()
                    os.killpg(victim.pid, signal.SIGKILL)
                    os.kill(replicas[0].pid, signal.SIGKILL)
                    kill["takeover_s"] = wait_until(
                        "the surviving watcher taking every account",
                        lambda: leases_by_pid(store).get(str(survivor.pid), 0) == len(boxes),
                        120,
                        every=0.05,
                    )

                killer = threading.Thread(target=kill_halfway, daemon=True)
                load_started = time.monotonic()
                arrivals.thread.start()
                killer.start()
                anyio.run(run_callers, balanced, boxes, args.callers, args.seconds, load)
                figures["load_s"] = round(time.monotonic() - load_started, 1)
                arrivals.stop.set()
                arrivals.thread.join()
                killer.join()
                figures["replica_rss_end_kib"] = rss_kib(replicas[1].pid)
                figures["watcher_rss_end_kib"] = rss_kib(watchers[1].pid)
                expected = set(arrivals.appended)
                drained = wait_until(
                    "every arrived message delivered",
                    lambda: expected <= {_arrival(d) for d in receiver.wait_for(0)},
                    180,
                    required=False,
                )
                figures["drain_after_load_s"] = round(drained, 1)
                time.sleep(3)  # a resend or a second event would arrive now
                deliveries = receiver.wait_for(0)
                refused = receiver.refused
            upstream_hits = Counter(line.split()[0] for line in access_log.read_text().splitlines() if line)
        with ThreadPoolExecutor(8) as pool:
            censuses = dict(zip(boxes, pool.map(lambda b: mailbox_census(dovecot, b), boxes), strict=True))
    finally:
        for w in watchers:
            if w.poll() is None:
                w.send_signal(signal.SIGTERM)
        dovecot.stop()

    # webhooks: each arrived message once, one webhook-id
    ids_by_arrival: dict[int, list[str]] = defaultdict(list)
    first_at: dict[int, float] = {}
    for d in deliveries:
        n = _arrival(d)
        ids_by_arrival[n].append(d.webhook_id)
        first_at[n] = min(first_at.get(n, d.received_at), d.received_at)
    lost = [n for n in arrivals.appended if n not in ids_by_arrival]
    two_events = [n for n, ids in ids_by_arrival.items() if len(set(ids)) > 1]
    resent = sum(len(ids) - len(set(ids)) for ids in ids_by_arrival.values())
    latency = [first_at[n] - at for n, (_, at) in arrivals.appended.items() if n in first_at]
    dead = kill.get("dead_watcher_accounts", set())
    in_takeover = [
        first_at[n] - at
        for n, (name, at) in arrivals.appended.items()
        if n in first_at
        and identity(dovecot, by_name[name]) in dead
        and kill["at"] <= at <= kill["at"] + kill["takeover_s"]
    ]

    # mailboxes: each account holds exactly its own messages, once; every move done is in Archive
    arrived_to: dict[str, set[str]] = defaultdict(set)
    for n, (name, _) in arrivals.appended.items():
        arrived_to[name].add(f"<arrive-{n}.{name}@{DOMAIN}>")
    foreign, missing, doubled = 0, 0, 0
    for box, folders in censuses.items():
        held = Counter[str]()
        for counted in folders.values():
            held.update(counted)
        own = {f"<seed-{k}.{box.name}@{DOMAIN}>" for k in range(args.seed)} | arrived_to[box.name]
        foreign += sum(1 for mid in held if not mid.endswith(f".{box.name}@{DOMAIN}>"))
        missing += len(own - set(held))
        doubled += sum(1 for n in held.values() if n > 1)

    def archived(name: str, subject: str) -> bool:
        kind, number = subject.split()[0], subject.split()[1]
        return censuses[by_name[name]].get("Archive", Counter()).get(f"<{kind}-{number}.{name}@{DOMAIN}>") == 1

    not_archived = sum(1 for name, subject in load.moved + quiet.moved if not archived(name, subject))
    # a move made again after its replica died, refused because the message had gone: moved by the killed replica
    # if it is in Archive (then counted apart), an error otherwise
    unanswered = load.moved_unanswered + quiet.moved_unanswered
    moved_by_killed = sum(1 for name, subject in unanswered if archived(name, subject))

    calls = sum(len(v) for v in load.latencies.values())
    figures.update(
        calls=calls,
        calls_per_s=round(calls / figures["load_s"], 1),
        rounds=load.rounds,
        moves_done=len(load.moved),
        errors=len(load.errors) + len(unanswered) - moved_by_killed,
        moves_done_by_killed_replica=moved_by_killed,
        error_samples=load.errors[:5],
        retried_after_replica_died=len(load.retried),
        per_tool=latencies(load),
        arrived=len(arrivals.appended),
        arrival_rate=round(len(arrivals.appended) / figures["load_s"], 1),
        delivered=len(ids_by_arrival),
        lost=len(lost),
        two_events=len(two_events),
        resent=resent,
        refused_signatures=refused,
        webhook_p50_ms=round(percentile(latency, 0.5) * 1000),
        webhook_p99_ms=round(percentile(latency, 0.99) * 1000),
        takeover_s=round(kill.get("takeover_s", float("nan")), 2),
        dead_watcher_accounts=len(dead),
        arrivals_during_takeover=len(in_takeover),
        webhook_during_takeover_p50_ms=round(percentile(in_takeover, 0.5) * 1000) if in_takeover else None,
        webhook_during_takeover_max_ms=round(max(in_takeover) * 1000) if in_takeover else None,
        foreign_messages=foreign,
        missing_messages=missing,
        doubled_messages=doubled,
        moved_not_in_archive=not_archived,
        requests_per_replica=dict(upstream_hits),
        load_average=os.getloadavg(),
    )
    report(figures)
    problems = (
        figures["errors"]
        + figures["baseline_errors"]
        + figures["lost"]
        + figures["two_events"]
        + foreign
        + missing
        + doubled
        + not_archived
    )
    if problems:
        raise SystemExit(1)


def _leases(store: Store) -> dict[str, str]:
    with store.transaction() as tx:
        found = tx.all("SELECT account, holder FROM watcher_leases WHERE expires_at > ?", time.time())
    return {str(a): str(h).split(":")[1] for a, h in found}


def _arrival(delivery: Any) -> int:
    """The arrival number of a delivered event, from its subject (`arrive N for NAME`)."""
    return int(delivery.event["data"]["subject"].split()[1])


def report(f: dict[str, Any]) -> None:
    mib = 1024
    w_idle, w_hold, accounts = f["watcher_rss_idle_kib"], f["watcher_rss_holding_kib"], f["watcher_accounts"]
    per_watched = (sum(w_hold) - sum(w_idle)) / max(1, sum(accounts))
    per_configured = (statistics.mean(f["replica_rss_start_kib"]) - f["replica_rss_one_account_kib"]) / max(
        1, f["accounts"] - 1
    )
    # after the warm-up a replica holds the apps of every account, or of as many as its bound keeps
    built = min(f["accounts"], f["max_built"])
    per_served = (statistics.mean(f["replica_rss_warm_kib"]) - statistics.mean(f["replica_rss_start_kib"])) / built
    print()
    print(f"| {f['accounts']} accounts, {f['callers']} callers, {f['seconds']:g} s | |")
    print("|---|---|")
    print(f"| calls (search, get, guarded move) | {f['calls']} in {f['load_s']} s: **{f['calls_per_s']} calls/s** |")
    for tool, t in f["per_tool"].items():
        print(f"| {tool} | {t['calls']} calls, p50 **{t['p50_ms']} ms**, p99 **{t['p99_ms']} ms** |")
    print(
        f"| errors | **{f['errors']}** (calls made again after their replica was killed: "
        f"{f['retried_after_replica_died']}, of which moves the killed replica had made before answering, found in "
        f"Archive: {f['moves_done_by_killed_replica']}) |"
    )
    print(
        f"| cross-account effects (mailbox census) | **{f['foreign_messages']}** foreign, {f['missing_messages']} "
        f"missing, {f['doubled_messages']} doubled; {f['moves_done']} moves done, {f['moved_not_in_archive']} not "
        "in Archive |"
    )
    print(
        f"| memory per replica | {f['replica_rss_start_kib'][0] / mib:.0f} MiB at start, "
        f"{statistics.mean(f['replica_rss_warm_kib']) / mib:.0f} MiB with {built} accounts' apps built "
        f"(every account called once; bound {f['max_built']}), "
        f"{f['replica_rss_end_kib'] / mib:.0f} MiB at the end (survivor) |"
    )
    print(
        f"| memory per watcher | {statistics.mean(w_idle) / mib:.0f} MiB holding none, "
        f"{', '.join(f'{r / mib:.0f} MiB holding {a}' for r, a in zip(w_hold, accounts, strict=True))}; "
        f"{f['watcher_rss_end_kib'] / mib:.0f} MiB holding all at the end |"
    )
    print(
        f"| memory per idle account | watcher **{per_watched:.0f} KiB** (IDLE connection and thread); replica "
        f"{per_configured:.0f} KiB configured, **{per_served:.0f} KiB** once its app is built |"
    )
    print(
        f"| webhook delivery latency (arrival → receiver) | p50 **{f['webhook_p50_ms']} ms**, p99 "
        f"**{f['webhook_p99_ms']} ms** ({f['arrived']} arrived at {f['arrival_rate']}/s) |"
    )
    print(
        f"| watcher killed: takeover | **{f['takeover_s']} s** until the survivor held all {f['accounts']} "
        f"({f['dead_watcher_accounts']} were the dead one's); {f['arrivals_during_takeover']} arrived meanwhile in "
        f"those, delivered after p50 {f['webhook_during_takeover_p50_ms']} ms, at most "
        f"{f['webhook_during_takeover_max_ms']} ms |"
    )
    print(
        f"| lost / delivered twice | **{f['lost']}** lost, **{f['two_events']}** with two events; "
        f"{f['resent']} resends of one webhook-id |"
    )
    print()
    print("Baseline, same run: one mailbox as before this issue (its own `serve` and `watch --account`).")
    print()
    print("| | one account alone | the fleet (random account) |")
    print("|---|---|---|")
    alone, fleet = f["baseline"]["alone"], f["baseline"]["fleet"]
    for tool in sorted(set(alone) | set(fleet)):
        a, b = alone.get(tool), fleet.get(tool)
        print(f"| {tool}, one caller, no load: p50 / p99 | {spread(a)} | {spread(b)} |")
    solo_pair = f["replica_rss_one_account_kib"] + f["watcher_rss_one_account_kib"]
    fleet_total = sum(f["replica_rss_warm_kib"]) + sum(w_hold)
    print(
        f"| memory for {f['accounts']} mailboxes | {f['accounts']} x ({f['replica_rss_one_account_kib'] / mib:.0f} "
        f"MiB serve + {f['watcher_rss_one_account_kib'] / mib:.0f} MiB watch) = "
        f"**{f['accounts'] * solo_pair / mib:,.0f} MiB** in {2 * f['accounts']} processes | "
        f"**{fleet_total / mib:,.0f} MiB** in 4 processes |"
    )
    print()
    print(json.dumps(f, indent=1, default=str))


if __name__ == "__main__":
    main()
