"""What `imap.promptly` saves per IMAP command, on each server of the test matrix, against raw imapclient.

    .venv/bin/python bench/promptly.py [--servers dovecot,mailutils,cyrus,courier] [--rounds 30]

Starts each server as the tests do (`tests/servers`, `tests/harness`; Cyrus and Courier need
`scripts/dev setup`), seeds one account with the sample mail, and opens two implicit-TLS connections
to it: raw imapclient (logged in, nothing else) and imap-mcp's own (`imap.connection.connect`:
TCP_NODELAY, TCP_QUICKACK after each command). One round is five commands, on each connection in
turn, the order swapped every round: EXAMINE INBOX, UID SEARCH ALL, UID FETCH (FLAGS ENVELOPE) of all,
STATUS Sent, CLOSE. The table gives each side's median milliseconds per command and their ratio.
"""

from __future__ import annotations

import argparse
import ssl
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from imapclient import IMAPClient

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "tests"))
from harness import Account, seeded_account, start_dovecot  # noqa: E402
from servers.courier import Courier  # noqa: E402
from servers.cyrus import Cyrus  # noqa: E402
from servers.mailutils import Mailutils  # noqa: E402

from imap_mcp.server.demo.dovecot import Dovecot  # noqa: E402
from imap_mcp.server.imap.connection import close, connect  # noqa: E402

COMMANDS_PER_ROUND = 5
SHM = Path("/dev/shm")


def start(name: str) -> Dovecot | Cyrus | Courier | Mailutils:
    if name == "dovecot":
        return start_dovecot()
    launchers: dict[str, type[Cyrus | Courier | Mailutils]] = {
        "cyrus": Cyrus,
        "courier": Courier,
        "mailutils": Mailutils,
    }
    server = launchers[name](base=SHM if SHM.is_dir() else Path("/tmp"))
    server.start()
    return server


def raw(account: Account) -> IMAPClient:
    """imapclient as it comes: TLS, LOGIN, nothing else."""
    context = ssl.create_default_context(cafile=str(account.server.cert_file))
    client = IMAPClient("127.0.0.1", account.server.tls_port, ssl_context=context, timeout=30)
    client.login(account.username, account.password)
    return client


def one_round(client: IMAPClient, sent: str) -> float:
    """Seconds per command of one round on `client`."""
    began = time.perf_counter()
    client.select_folder("INBOX", readonly=True)
    uids = client.search("ALL")
    client.fetch(uids, ["FLAGS", "ENVELOPE"])
    client.folder_status(sent, ["MESSAGES"])
    client.close_folder()
    return (time.perf_counter() - began) / COMMANDS_PER_ROUND


def measure(name: str, rounds: int) -> tuple[float, float]:
    """Median milliseconds per command: raw imapclient, imap-mcp's connection."""
    server = start(name)
    try:
        account = seeded_account(server)
        sent = account.mailbox("Sent")
        sides: list[tuple[IMAPClient, Callable[[IMAPClient], None]]] = [
            (raw(account), lambda c: c.logout()),
            (connect(account.imap_settings()), close),
        ]
        times: list[list[float]] = [[], []]
        for client, _ in sides:
            one_round(client, sent)  # warm-up: the server's caches, the first EXAMINE
        for n in range(rounds):
            order = (0, 1) if n % 2 == 0 else (1, 0)
            for index in order:
                times[index].append(one_round(sides[index][0], sent))
        for client, done in sides:
            done(client)
        return statistics.median(times[0]) * 1000, statistics.median(times[1]) * 1000
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default="dovecot,mailutils,cyrus,courier")
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    print(f"| server | raw imapclient, ms/command | imap-mcp, ms/command | ratio |  ({args.rounds} rounds)")
    print("|---|---:|---:|---:|")
    for name in args.servers.split(","):
        before, after = measure(name, args.rounds)
        print(f"| {name} | {before:.2f} | {after:.2f} | {after / before:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
