"""Realistic, deterministic test mail written straight into a Maildir (adapted from the team's test-infra/populate.py).

`generate(count, seed)` yields messages oldest first: heavy and light senders, ~5% non-ASCII
subjects, ~30% replies, ~25% multipart/alternative, ~8% with an attachment, ~70% \\Seen.
`write_maildir(path, messages)` writes them into `cur/` named by their date, so Dovecot gives
them UIDs in date order; INTERNALDATE is the file mtime.
"""

import base64
import collections
import contextlib
import datetime as dt
import email.utils
import os
import random
import re
import socket
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

# ----------------------------------------------------------------------------
# message generator
# ----------------------------------------------------------------------------
FIRST = [
    "Alice",
    "Bob",
    "Carol",
    "Dave",
    "Erin",
    "Frank",
    "Grace",
    "Heidi",
    "Ivan",
    "Judy",
    "Mallory",
    "Niaj",
    "Olivia",
    "Peggy",
    "Rupert",
    "Sybil",
    "Trent",
    "Victor",
    "Walter",
    "Zoë",
    "José",
    "Søren",
    "Łukasz",
    "Ana",
    "Mei",
    "Kenji",
]
LAST = [
    "Smith",
    "Jones",
    "Müller",
    "García",
    "Rossi",
    "Dubois",
    "Nowak",
    "Tanaka",
    "Kim",
    "Olsen",
    "Novák",
    "Silva",
    "Brown",
    "Wilson",
    "O'Neil",
    "Svensson",
]
DOMAINS = [
    "example.com",
    "example.org",
    "example.net",
    "corp.example",
    "mail.test",
    "lists.example.org",
    "billing.example.com",
]
TOPICS = [
    "Quarterly report",
    "Project kickoff",
    "Invoice",
    "Meeting notes",
    "Travel plans",
    "Budget review",
    "Release 2.4",
    "Server outage",
    "Team lunch",
    "Contract draft",
    "Weekly status",
    "Design review",
    "Security update",
    "Customer feedback",
    "Hiring plan",
    "Offsite agenda",
    "Password reset",
    "Newsletter",
    "Shipping confirmation",
    "Bug triage",
]
NONASCII_TOPICS = [
    "Grüße aus München",
    "Réunion de l'équipe",
    "Año nuevo: planificación",
    "見積もりのご依頼",
    "Отчёт за квартал",
    "Café ☕ on Friday?",
]
WORDS = [
    "the",
    "a",
    "project",
    "deadline",
    "budget",
    "report",
    "meeting",
    "team",
    "customer",
    "invoice",
    "server",
    "release",
    "schedule",
    "review",
    "contract",
    "update",
    "please",
    "thanks",
    "attached",
    "follow",
    "up",
    "question",
    "answer",
    "issue",
    "ticket",
    "priority",
    "urgent",
    "next",
    "week",
    "monday",
    "friday",
    "office",
    "design",
    "draft",
    "final",
    "numbers",
    "revenue",
    "cost",
    "estimate",
    "approve",
    "reject",
    "discuss",
    "agenda",
    "minutes",
    "action",
    "item",
    "owner",
    "status",
    "blocked",
    "done",
    "pending",
    "shipment",
    "order",
    "account",
    "payment",
    "receipt",
    "travel",
    "hotel",
    "flight",
    "conference",
    "slides",
    "demo",
]
KEYWORDS = ["$Forwarded", "Important", "Work"]
ATTACH_TYPES = [("application/pdf", "pdf"), ("text/csv", "csv"), ("image/png", "png")]


def _addr(rng: random.Random, i: int | None = None) -> tuple[str, str]:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    local = re.sub(r"[^a-z]", "", (first + "." + last).lower().encode("ascii", "ignore").decode()) or "user"
    return f"{first} {last}", f"{local}@{rng.choice(DOMAINS)}"


_FMT_CACHE: dict[tuple[str, str], str] = {}


def _fmt_addr(name: str, addr: str) -> str:
    # formataddr does RFC 2047 for non-ASCII names and quotes specials
    k = (name, addr)
    v = _FMT_CACHE.get(k)
    if v is None:
        v = _FMT_CACHE[k] = email.utils.formataddr(k, charset="utf-8")
    return v


def _hdr_subject(s: str) -> str:
    if s.isascii():
        return s
    return "=?utf-8?b?" + base64.b64encode(s.encode()).decode() + "?="


def _paragraph(rng: random.Random, n: int) -> str:
    w = rng.choices(WORDS, k=n)
    w[0] = w[0].capitalize()
    return " ".join(w) + "."


@dataclass
class Msg:
    raw: bytes  # LF line endings (use .crlf() for IMAP APPEND)
    date: dt.datetime  # Date header == INTERNALDATE
    flags: tuple[str, ...] = ()  # IMAP system flags, e.g. ("\\Seen",)
    keywords: tuple[str, ...] = ()  # e.g. ("$Forwarded",)
    meta: dict[str, object] = field(default_factory=dict)

    def crlf(self) -> bytes:
        return self.raw.replace(b"\n", b"\r\n")


def generate(
    count: int,
    seed: int = 1,
    years: float = 5.0,
    end: dt.datetime | None = None,
    folder: str = "INBOX",
    owner: tuple[str, str] = ("Alice Test", "alice@example.com"),
) -> Iterator[Msg]:
    """Yield `count` Msg objects in chronological order (oldest first)."""
    rng = random.Random(seed)
    end = end or dt.datetime(2025, 6, 30, 12, 0, tzinfo=dt.UTC)
    span = int(years * 365.25 * 86400)
    start_ts = int(end.timestamp()) - span
    # chronological, realistic spacing (sorted random points)
    stamps = sorted(start_ts + rng.randrange(span) for _ in range(count))
    senders = [_addr(rng) for _ in range(200)]
    # a few heavy senders, so "SEARCH FROM x" has big and small answers
    heavy = [
        ("Billing Robot", "billing@billing.example.com"),
        ("Project List", "project@lists.example.org"),
        ("Carol Boss", "carol.boss@corp.example"),
    ]
    attach_blobs = {ext: bytes(rng.getrandbits(8) for _ in range(1536)) for _, ext in ATTACH_TYPES}
    recent: collections.deque[tuple[str, str, str]] = collections.deque(maxlen=50)  # (msgid, subject, refs)
    tzs = [
        dt.UTC,
        dt.timezone(dt.timedelta(hours=2)),
        dt.timezone(dt.timedelta(hours=-5)),
        dt.timezone(dt.timedelta(hours=9)),
        dt.timezone(dt.timedelta(hours=5, minutes=30)),
    ]
    sent_folder = folder.lower() in ("sent", "sent items", "sent messages")
    for i, ts in enumerate(stamps):
        r = rng.random()
        if r < 0.10:
            fname, faddr = heavy[0]
        elif r < 0.16:
            fname, faddr = heavy[1]
        elif r < 0.18:
            fname, faddr = heavy[2]
        else:
            fname, faddr = rng.choice(senders)
        if sent_folder:
            (fname, faddr), (tname, taddr) = owner, (fname, faddr)
        else:
            tname, taddr = owner
        tz = rng.choice(tzs)
        date = dt.datetime.fromtimestamp(ts, tz)
        domain = faddr.split("@", 1)[1]
        msgid = f"<{ts:x}.{i}.{seed}@{domain}>"
        reply = recent and rng.random() < 0.30
        if reply:
            pid, psubj, prefs = rng.choice(list(recent))
            subject = psubj if psubj.startswith("Re: ") else "Re: " + psubj
            refs = (prefs + " " + pid).strip().split()[-10:]
            thread_hdrs = f"In-Reply-To: {pid}\nReferences: {' '.join(refs)}\n"
            refs_s = " ".join(refs)
        else:
            subject = (
                rng.choice(NONASCII_TOPICS) if rng.random() < 0.05 else f"{rng.choice(TOPICS)} #{rng.randrange(1000)}"
            )
            thread_hdrs, refs_s = "", ""
        recent.append((msgid, subject, refs_s))
        hdr = [f"Return-Path: <{faddr}>", f"From: {_fmt_addr(fname, faddr)}", f"To: {_fmt_addr(tname, taddr)}"]
        if rng.random() < 0.2:
            cn, ca = rng.choice(senders)
            hdr.append(f"Cc: {_fmt_addr(cn, ca)}")
        hdr += [
            f"Subject: {_hdr_subject(subject)}",
            f"Date: {email.utils.format_datetime(date)}",
            f"Message-ID: {msgid}",
        ]
        if thread_hdrs:
            hdr.append(thread_hdrs.rstrip("\n"))
        if faddr.startswith("project@"):
            hdr.append("List-Id: Project list <project.lists.example.org>")
        hdr.append("MIME-Version: 1.0")
        text = "\n\n".join(_paragraph(rng, rng.randint(8, 40)) for _ in range(rng.randint(1, 4)))
        text = f"Hi {tname.split()[0]},\n\n{text}\n\n-- \n{fname}\n"
        kind = rng.random()
        attach = None
        if kind < 0.08:
            ctype, ext = rng.choice(ATTACH_TYPES)
            attach = (ctype, f"file-{i}.{ext}", attach_blobs[ext])
        b = f"b{i}x{seed}"
        if attach:
            a64 = base64.encodebytes(attach[2]).decode()
            body = (
                f'Content-Type: multipart/mixed; boundary="{b}"\n\n'
                f"This is a multi-part message in MIME format.\n\n--{b}\n"
                f"Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n{text}\n"
                f'--{b}\nContent-Type: {attach[0]}; name="{attach[1]}"\n'
                f'Content-Disposition: attachment; filename="{attach[1]}"\n'
                f"Content-Transfer-Encoding: base64\n\n{a64}\n--{b}--\n"
            )
        elif kind < 0.33:
            html = "".join(f"<p>{p}</p>" for p in text.split("\n\n"))
            body = (
                f'Content-Type: multipart/alternative; boundary="{b}"\n\n--{b}\n'
                f"Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n{text}\n"
                f"--{b}\nContent-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n"
                f"<html><body>{html}</body></html>\n--{b}--\n"
            )
        else:
            body = f"Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n{text}"
        raw = ("\n".join(hdr) + "\n" + body).encode("utf-8")
        flags = []
        if folder.lower() == "drafts":
            flags.append("\\Draft")
        elif sent_folder or rng.random() < 0.70:
            flags.append("\\Seen")
        if rng.random() < 0.05:
            flags.append("\\Flagged")
        if (reply and rng.random() < 0.3) or rng.random() < 0.05:
            flags.append("\\Answered")
        kws = tuple(k for k in KEYWORDS if rng.random() < 0.04)
        yield Msg(
            raw,
            date,
            tuple(flags),
            kws,
            {
                "from": faddr,
                "reply": bool(reply),
                "attach": bool(attach),
                "html": attach is None and kind < 0.33,
                "msgid": msgid,
            },
        )


@contextlib.contextmanager
def as_user(uid: int, gid: int) -> Iterator[None]:
    """Temporarily write files as the mail uid (when running as root)."""
    if os.geteuid() != 0 or uid <= 0:
        yield
        return
    os.setegid(gid)
    os.seteuid(uid)
    try:
        yield
    finally:
        os.seteuid(0)
        os.setegid(0)


# ----------------------------------------------------------------------------
# writers
# ----------------------------------------------------------------------------
MAILDIR_FLAG = {"\\Draft": "D", "\\Flagged": "F", "\\Answered": "R", "\\Seen": "S", "\\Deleted": "T"}


def write_maildir(path: str, msgs: Iterable[Msg], uid: int = -1, gid: int = -1) -> int:
    """Write messages straight into a Maildir (cur/). Dovecot assigns UIDs on the next
    sync, in filename order; names start with the Date timestamp, so UIDs follow dates.
    INTERNALDATE = file mtime. S= / W= sizes let Dovecot skip stat/reads for RFC822.SIZE."""
    host = socket.gethostname().replace("/", "_").replace(":", "_")
    pid = os.getpid()
    n = 0
    with as_user(uid, gid):
        for sub in ("cur", "new", "tmp"):
            os.makedirs(os.path.join(path, sub), exist_ok=True)
        kwfile = os.path.join(path, "dovecot-keywords")
        kwidx = {}
        if os.path.exists(kwfile):
            with open(kwfile) as known:
                lines = known.readlines()
            for line in lines:
                k, _, name = line.strip().partition(" ")
                if name:
                    kwidx[name] = int(k)
        cur = os.path.join(path, "cur")
        for m in msgs:
            for k in m.keywords:
                if k not in kwidx:
                    kwidx[k] = len(kwidx)
            letters = sorted(MAILDIR_FLAG[f] for f in m.flags if f in MAILDIR_FLAG)
            letters += sorted(chr(ord("a") + kwidx[k]) for k in m.keywords)
            ts = int(m.date.timestamp())
            size = len(m.raw)
            vsize = size + m.raw.count(b"\n")
            name = f"{ts}.M{n:06d}P{pid}.{host},S={size},W={vsize}:2,{''.join(letters)}"
            fn = os.path.join(cur, name)
            fd = os.open(fn, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, m.raw)
            finally:
                os.close(fd)
            os.utime(fn, (ts, ts))
            n += 1
        if kwidx:
            with open(kwfile, "w") as f:
                for k, i in sorted(kwidx.items(), key=lambda x: x[1]):
                    f.write(f"{i} {k}\n")
    return n
