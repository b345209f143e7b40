"""Test harness: throwaway IMAP servers, per-test accounts, and imap-mcp servers to talk to.

Every test that touches mail talks to a real IMAP server on 127.0.0.1, started once per session
(per xdist worker): Dovecot (Debian `dovecot-imapd`, by `server/demo/dovecot.py`), and for the
server matrix also Cyrus and Courier (`tests/servers/`). Each test gets its own account
(`t-<hex>`, logging in with `ANY_USER_PASSWORD`), so tests never see each other's mail.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio
import httpx2
from imapclient import IMAPClient
from mcp import Client, StdioServerParameters
from mcp.client import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    ProgressNotification,
)

from imap_mcp.protocol import Guard
from imap_mcp.sealing import KeyRing
from imap_mcp.server.config import ImapSettings, Settings, TlsMode
from imap_mcp.server.demo.dovecot import Dovecot, free_port
from imap_mcp.server.imap.pool import ImapPool
from imap_mcp.server.imap.promptly import exchange_promptly
from imap_mcp.server.serving.app import build_server
from imap_mcp.server.setting_values import Secret

ANY_USER_PASSWORD = "test-pw-7f3a"
#: the mailboxes of a seeded account besides INBOX, as Dovecot names them
SAMPLE_MAILBOXES = ("Projects/Entwürfe", "Projects", "Sent", "Drafts", "Trash", "Junk", "Archive")
#: the two eras, as the SDK client names them
MODES = ("legacy", "2026-07-28")
#: a person's answer to a dialog, as an ElicitResult names it
Action = Literal["accept", "decline", "cancel"]

#: the sample INBOX, newest first (server/demo/sample_mail.py)
INBOX_NEWEST_FIRST = [
    "Urgent: account notice",
    "Re: Project kickoff",
    "Project kickoff",
    "Grüße aus München",
    "Photos from the trip",
    "Invoice and overview",
    "Your weekly deals",
    "Team lunch on Friday?",
    "Quarterly report",
]


class MailServer(Protocol):
    """What the harness needs of a running IMAP server: Dovecot, Cyrus or Courier."""

    @property
    def port(self) -> int: ...
    @property
    def tls_port(self) -> int: ...
    @property
    def cert_file(self) -> Path: ...


def server_name(server: MailServer) -> str:
    return str(getattr(server, "name", "dovecot"))


@dataclass
class Account:
    """One test account on one of the session's IMAP servers."""

    server: MailServer
    username: str
    password: str = ANY_USER_PASSWORD

    @property
    def dovecot(self) -> Dovecot:
        """The account's server, for tests about Dovecot itself (its log, doveadm)."""
        assert isinstance(self.server, Dovecot), f"a Dovecot-only test ran on {server_name(self.server)}"
        return self.server

    @property
    def server_name(self) -> str:
        return server_name(self.server)

    @property
    def delimiter(self) -> str:
        """The server's hierarchy delimiter: '/' on Dovecot and Cyrus, '.' on Courier."""
        return str(getattr(self.server, "delimiter", "/"))

    def mailbox(self, name: str) -> str:
        """`name` ('/' between levels) as this server names it: `Sent` is `INBOX.Sent` on Courier.

        A name already in the server's form (INBOX, or `INBOX.Sent` on Courier) stays as it is.
        """
        prefix = str(getattr(self.server, "prefix", ""))
        if name.upper() == "INBOX" or (prefix and name.startswith(prefix)):
            return name
        return prefix + name.replace("/", self.delimiter)

    def on_server(self, args: dict[str, Any]) -> dict[str, Any]:
        """Tool arguments with their mailbox names (`mailbox`, `destination`, `new_name`) as `mailbox` gives them."""
        named: dict[str, str] = {
            key: self.mailbox(args[key]) for key in ("mailbox", "destination", "new_name") if key in args
        }
        return {**args, **named}

    def quoted(self, text: str) -> str:
        """`text` with each quoted sample mailbox name ("Trash", 'Projects/Entwürfe') as this server names it."""
        for name in SAMPLE_MAILBOXES:
            for quote in ('"', "'"):
                text = text.replace(f"{quote}{name}{quote}", f"{quote}{self.mailbox(name)}{quote}")
        return text

    def port_for(self, tls: TlsMode) -> int:
        return self.server.tls_port if tls == "implicit" else self.server.port

    def env(self, tls: TlsMode = "implicit", /, **extra: str) -> dict[str, str]:
        """The environment for an imap-mcp process serving this account."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("IMAP_", "SMTP_")) and k != "ELICITATION"}
        env.update(
            IMAP_HOST="127.0.0.1",
            IMAP_PORT=str(self.port_for(tls)),
            IMAP_USERNAME=self.username,
            IMAP_PASSWORD=self.password,
            IMAP_TLS=tls,
            IMAP_CA_FILE=str(self.server.cert_file),
        )
        env.update(extra)
        return env

    def imap_settings(self, tls: TlsMode = "implicit") -> ImapSettings:
        return ImapSettings(
            host="127.0.0.1",
            port=self.port_for(tls),
            username=self.username,
            password=Secret(self.password),
            tls=tls,
            ca_file=self.server.cert_file,
        )

    def settings(self, tls: TlsMode = "implicit") -> Settings:
        return Settings(imap=self.imap_settings(tls))

    def imap(self) -> IMAPClient:
        """A direct IMAP connection, as another mail client of the same person would have."""
        context = ssl.create_default_context(cafile=str(self.server.cert_file))
        client = IMAPClient("127.0.0.1", self.server.tls_port, ssl_context=context, timeout=30)
        exchange_promptly(client)
        client.login(self.username, self.password)
        return client


def new_account(server: MailServer) -> Account:
    """A new account: Dovecot takes any `t-*` login, the other servers are told about it first (Mailutils's
    logins are `t-*@domain`: `login_name`)."""
    name = f"t-{uuid.uuid4().hex[:12]}"
    account = Account(server, getattr(server, "login_name", str)(name))
    add_user = getattr(server, "add_user", None)
    if add_user is not None:
        add_user(account.username, account.password)
    return account


def keeps_append_flags(server: MailServer) -> bool:
    """Whether APPEND keeps the flags and the date it is given (Mailutils keeps neither)."""
    return bool(getattr(server, "keeps_append_flags", True))


def seeded_account(server: MailServer) -> Account:
    """A new account holding the sample mail of `server/demo/sample_mail.py`."""
    from imap_mcp.server.demo.sample_mail import seed

    account = new_account(server)
    client = account.imap()
    try:
        seed(client)
        if not keeps_append_flags(server):
            _flag_sample(client)
    finally:
        client.logout()
    return account


def _flag_sample(client: IMAPClient) -> None:
    """Put the sample messages' flags on with STORE, for a server whose APPEND drops them: each mailbox held
    nothing before the sample, so its n-th sample message is message number n."""
    from imap_mcp.server.demo.sample_mail import sample_messages
    from imap_mcp.server.imap.mailboxes import personal_name

    by_mailbox: dict[str, list[tuple[bytes, ...]]] = {}
    for item in sample_messages():
        by_mailbox.setdefault(personal_name(client, item.mailbox), []).append(item.flags)
    client.use_uid = False
    try:
        for mailbox, flags in by_mailbox.items():
            if any(flags):
                client.select_folder(mailbox)
                for number, these in enumerate(flags, start=1):
                    if these:
                        client.add_flags([number], these, silent=True)
                client.close_folder()
    finally:
        client.use_uid = True


def wait_for_line(log: Path, text: str, timeout: float = 60.0) -> str:
    """The first line of `log` containing `text`, once the server has written it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [line for line in log.read_text(errors="replace").splitlines() if text in line]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no line with {text!r} in:\n{log.read_text(errors='replace')[-3000:]}")


def logins_logged(dovecot: Dovecot, user: str, method: str) -> int:
    """How many logins of `user` by `method` Dovecot's log shows, once it shows one (its log process writes the
    line a moment after the login it tells of)."""
    line = f"Login: user=<{user}>, method={method},"
    wait_for_line(dovecot.log_file, line, timeout=10)
    return dovecot.log_file.read_text(errors="replace").count(line)


def start_dovecot(**options: object) -> Dovecot:
    base = Path(os.environ.get("DOVECOT_TMPDIR", "/tmp"))
    dovecot = Dovecot(users={"alice": "alice-pw"}, any_user_password=ANY_USER_PASSWORD, base=base, **options)  # type: ignore[arg-type]
    dovecot.start()
    return dovecot


def stdio_params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "imap_mcp.server", "stdio"], env=env)


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`imap-mcp ARGS` run to its end, with stdout and stderr as text."""
    return subprocess.run(
        [sys.executable, "-m", "imap_mcp.server", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def wait_for_port(port: int, process: subprocess.Popen[Any], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listened on port {port} within {timeout} s")


@contextlib.contextmanager
def http_server(
    env: dict[str, str],
    *args: str,
    log_path: Path | None = None,
    command: tuple[str, ...] = (sys.executable, "-m", "imap_mcp.server"),
    cwd: Path | None = None,
    stderr: ServerLog | None = None,
    started: list[subprocess.Popen[bytes]] | None = None,
    port: int | None = None,
) -> Iterator[str]:
    """Run `imap-mcp serve` (`command serve`) on `port` (default: a free one); yields its MCP URL (the process is
    added to `started`).

    The server's stderr goes to `log_path` (default: a temp file removed afterwards), never to
    a pipe nobody reads, so a chatty server cannot block on a full pipe; or to `stderr`, which reads it.
    """
    port = port or free_port()
    with contextlib.ExitStack() as stack:
        if log_path is None:
            log_path = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="imap-mcp-log."))) / "stderr.log"
        log = stack.enter_context(open(log_path, "ab"))
        process = subprocess.Popen(
            [*command, "serve", "--port", str(port), *args],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log if stderr is None else stderr.writer,
        )
        if started is not None:
            started.append(process)
        try:
            try:
                wait_for_port(port, process)
            except (RuntimeError, TimeoutError) as exc:
                said = log_path.read_text(errors="replace") if stderr is None else "\n".join(stderr.lines)
                raise RuntimeError(f"{exc}; server log:\n{said[-4000:]}") from None
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextlib.contextmanager
def spec_fixture_server(env: dict[str, str], log_path: Path) -> Iterator[str]:
    """`imap-mcp serve` in its default single-instance mode with the conformance fixtures on.

    The URL names `localhost`: the suite's DNS-rebinding scenario needs a local host name.
    """
    with http_server(dict(env, IMAP_MCP_SPEC_FIXTURES="true"), log_path=log_path) as url:
        yield url.replace("127.0.0.1", "localhost")


def structured(result: Any) -> dict[str, Any]:
    """The structured result of a tool call that must have succeeded."""
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content  # type: ignore[no-any-return]


#: how the SDK reports an exception a tool did not turn into a tool error: the bare prefix, no message
#: (a refusal reads `Error executing tool <name>: <message>`)
CRASH = re.compile(r"Error executing tool [\w.-]+")


def error_text(result: Any) -> str:
    """The message of a tool call that must have been refused with a tool error (isError): not a protocol
    error, and not a crash (an exception no layer mapped, which the SDK reports with a generic text)."""
    assert result.is_error, result.structured_content
    text = str(result.content[0].text)
    assert not CRASH.fullmatch(text), f"a crash, not a refusal: {text}"
    return text


def served(settings: Settings | Account, pool: Any = None, guard: Any = None, **options: Any) -> Client:
    """An in-memory MCP client of a fresh server for `settings` (or an account's settings), with `pool` and
    `guard` when given; `options` go to the client (mode, elicitation_callback)."""
    if isinstance(settings, Account):
        settings = settings.settings()
    return Client(build_server(settings, pool=pool, guard=guard), **options)


def guarded_client(account: Account, person: Person | None = None) -> Client:
    """A 2026-07-28 client of a fresh server for `account` whose guard asks by elicitation; `person` answers
    the dialogs (without one, the client offers no elicitation)."""
    options: dict[str, Any] = {"elicitation_callback": person} if person else {}
    return served(account, guard=Guard(KeyRing(["g" * 40]), elicitation=True), mode="2026-07-28", **options)


async def search(client: Client, **arguments: Any) -> dict[str, Any]:
    """One search_messages page that must have succeeded."""
    return structured(await client.call_tool("search_messages", arguments))


def dialog_text(result: InputRequiredResult) -> str:
    """The text of the approval dialog a first round asks a person to answer."""
    assert result.input_requests is not None
    approval = result.input_requests["approval"]
    assert isinstance(approval, ElicitRequest)
    return approval.params.message


async def first_round(client: Client, tool: str, args: dict[str, Any]) -> InputRequiredResult | CallToolResult:
    """A call to a guarded tool, as a 2026-07-28 client makes it: a question (input_required) or a result."""
    return await client.session.call_tool(tool, args, allow_input_required=True)


async def ask(client: Client, tool: str, args: dict[str, Any]) -> InputRequiredResult:
    """The first round of a guarded call, which must be a question for a person."""
    first = await first_round(client, tool, args)
    assert isinstance(first, InputRequiredResult), first
    return first


async def answer(
    client: Client, tool: str, args: dict[str, Any], state: str | None, action: Action = "accept", ticked: bool = True
) -> CallToolResult | InputRequiredResult:
    """The retry carrying the person's answer to the approval form, exactly as a 2026-07-28 client sends it."""
    response = ElicitResult(action=action, content={"approve": ticked} if action == "accept" else None)
    return await client.session.call_tool(
        tool, args, allow_input_required=True, input_responses={"approval": response}, request_state=state
    )


def append_message(
    account: Account,
    raw: bytes,
    mailbox: str = "INBOX",
    flags: tuple[bytes, ...] = (),
    received: dt.datetime | None = None,
) -> int:
    """Append `raw` as another mail client would (`received`: its INTERNALDATE, default now); returns its UID.

    On a server whose APPEND keeps neither flags nor date (Mailutils), `received` goes in as a Received
    header (its INTERNALDATE comes from there), the flags are STOREd, and the UID is read back.
    """
    client = account.imap()
    try:
        if keeps_append_flags(account.server):
            response = client.append(account.mailbox(mailbox), raw, flags=flags, msg_time=received)
            return int(response.split(b"]")[0].split()[-1])
        return _append_then_flag(client, account.mailbox(mailbox), raw, flags, received)
    finally:
        client.logout()


def _append_then_flag(
    client: IMAPClient, mailbox: str, raw: bytes, flags: tuple[bytes, ...], received: dt.datetime | None
) -> int:
    """APPEND to a server without UIDPLUS that drops APPEND's flags and date; the new message's UID."""
    if received is not None:
        raw = f"Received: by imap-mcp tests; {format_datetime(received)}\r\n".encode() + raw
    client.append(mailbox, raw)
    count = int(client.select_folder(mailbox)[b"EXISTS"])
    client.use_uid = False
    try:
        uid = int(client.fetch([count], ["UID"])[count][b"UID"])
        if flags:
            client.add_flags([count], flags, silent=True)
    finally:
        client.use_uid = True
    client.select_folder(mailbox, readonly=True)  # leaves the read-write view without expunging anything
    client.close_folder()
    return uid


def plain_mail(subject: str, sender: str = "zoe@example.com") -> bytes:
    """A short text message from `sender` to the demo address."""
    message = EmailMessage()
    message["From"] = sender
    message["To"] = "demo@example.org"
    message["Subject"] = subject
    message.set_content("hello\n")
    return message.as_bytes()


def mailbox_names(account: Account) -> set[str]:
    """The names of every mailbox of `account`, as the IMAP server lists them."""
    client = account.imap()
    try:
        return {name for _, _, name in client.list_folders()}
    finally:
        client.logout()


def message_id_counts(client: IMAPClient, mailbox: str) -> Counter[str]:
    """How many messages in `mailbox` carry each Message-ID, read over `client` (a message without one: '')."""
    counts: Counter[str] = Counter()
    client.select_folder(mailbox, readonly=True)
    uids = client.search(["ALL"])
    for data in client.fetch(uids, ["BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)]"]).values():
        header = next(v for k, v in data.items() if k.startswith(b"BODY[HEADER.FIELDS"))
        counts[header.decode().split(":", 1)[-1].strip()] += 1
    return counts


class ProgressNotifications:
    """A client's message handler: every progress notification the server sent, with a token or not."""

    def __init__(self) -> None:
        self.progress: list[ProgressNotification] = []

    async def __call__(self, message: object) -> None:
        if isinstance(message, ProgressNotification):
            self.progress.append(message)


class ServerLog:
    """A server process's stderr, read line by line as it comes: pass `writer` as its stderr (or errlog), then
    wait for a line with `line(text)`: an event, never a poll of a file."""

    def __init__(self) -> None:
        read_end, write_end = os.pipe()
        self.writer = os.fdopen(write_end, "w")
        self._reader = os.fdopen(read_end, "r", errors="replace")
        self.lines: list[str] = []
        self._arrived = threading.Condition()
        self._thread = threading.Thread(target=self._read, name="server-log", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        for text in self._reader:
            with self._arrived:
                self.lines.append(text.rstrip("\n"))
                self._arrived.notify_all()

    def _wait(self, text: str, timeout: float) -> str:
        with self._arrived:
            found = self._arrived.wait_for(lambda: next((x for x in self.lines if text in x), None), timeout)
        if found is None:
            raise AssertionError(f"no line with {text!r} within {timeout} s; the log:\n" + "\n".join(self.lines))
        return found

    async def line(self, text: str, hang_guard: float = 120.0) -> str:
        """The first line (so far or to come) that contains `text`; `hang_guard` only turns a hang into a failure."""
        return await anyio.to_thread.run_sync(self._wait, text, hang_guard)

    def __enter__(self) -> ServerLog:
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop reading once every process that writes here has ended (they hold the pipe open)."""
        self.writer.close()
        self._thread.join(10)
        self._reader.close()


# --- Approvals (delete/move/manage_mailbox): ids, a scripted person, servers that lack things ---


def inbox_uids(account: Account) -> set[int]:
    """The UIDs INBOX holds now, as another mail client sees them."""
    client = account.imap()
    try:
        client.select_folder("INBOX", readonly=True)
        return set(client.search(["ALL"]))
    finally:
        client.logout()


def message_ids(account: Account, mailbox: str) -> list[str]:
    """The ids of every message in `mailbox` (named as `Account.mailbox` takes it), as search_messages returns them."""
    from imap_mcp.server.imap.message_ids import MessageRef

    mailbox = account.mailbox(mailbox)
    client = account.imap()
    try:
        uidvalidity = int(client.select_folder(mailbox, readonly=True)[b"UIDVALIDITY"])
        return [MessageRef(mailbox, uidvalidity, uid).id for uid in sorted(client.search(["ALL"]))]
    finally:
        client.logout()


def fresh_message(account: Account, subject: str) -> str:
    """A new message in the account's INBOX, for one test alone; returns its id."""
    message = EmailMessage()
    message["From"], message["To"], message["Subject"] = "sender@example.org", account.username, subject
    message.set_content("A message of its own for one test.\n")
    uid = append_message(account, bytes(message))
    return next(i for i in message_ids(account, "INBOX") if i.endswith(f".{uid}"))


@dataclass
class Person:
    """An elicitation callback: records every dialog it is shown and answers as told."""

    action: Action = "accept"
    ticked: bool = True
    shown: list[str] = field(default_factory=list)

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        from mcp.types import ElicitResult

        self.shown.append(params.message)
        return ElicitResult(action=self.action, content={"approve": self.ticked} if self.action == "accept" else None)


def pool_without(
    account: Account,
    capabilities: tuple[str, ...] = (),
    mailboxes: tuple[str, ...] = (),
    settings: ImapSettings | None = None,
) -> ImapPool:
    """A pool whose connections do not see `capabilities` (e.g. MOVE) nor `mailboxes` in LIST (`settings`:
    where it connects, by default straight to the account).

    Dovecot still runs whatever is sent; this only changes what imap-mcp is told, as a server
    without those capabilities (or without a Trash that Dovecot would re-create) would tell it.
    """
    from imap_mcp.server.imap.connection import connect

    hidden = {c.upper().encode() for c in capabilities}
    mailboxes = tuple(account.mailbox(name) for name in mailboxes)

    def connector(settings: ImapSettings) -> IMAPClient:
        client = connect(settings)
        client._cached_capabilities = tuple(c for c in client.capabilities() if c.upper() not in hidden)
        listed = client.list_folders
        client.list_folders = lambda *a, **k: [f for f in listed(*a, **k) if f[2] not in mailboxes]
        return client

    return ImapPool(settings or account.imap_settings(), connector=connector)


# several accounts behind one `imap-mcp serve` (IMAP_MCP_ACCOUNTS_FILE), each chosen by its bearer token
ALICE_TOKEN = "alice-token-0123456789abcdef"
BOB_TOKEN = "bob-token-0123456789abcdef"
#: the tools of a read-only account (and of one without SMTP, the read-only ones among them)
READ_TOOLS = [
    "get_attachments",
    "get_message",
    "get_server_info",
    "get_thread",
    "get_webhook_status",
    "list_mailboxes",
    "search_messages",
]


def accounts_env(
    tmp_path: Path, alice: Account, bob: Account, alice_extra: str = "", bob_extra: str = ""
) -> dict[str, str]:
    """The environment of a server for alice and bob: their IMAP server in the environment, logins in the file;
    `alice_extra` and `bob_extra` are more lines of each one's table."""
    path = tmp_path / "accounts.toml"
    path.write_text(
        f'[accounts.alice]\nauth_tokens = ["{ALICE_TOKEN}"]\nIMAP_USERNAME = "{alice.username}"\n{alice_extra}\n'
        f'[accounts.bob]\nauth_tokens = ["{BOB_TOKEN}"]\nIMAP_USERNAME = "{bob.username}"\n{bob_extra}\n'
    )
    path.chmod(0o600)
    env = alice.env()
    del env["IMAP_USERNAME"]
    return {**env, "IMAP_MCP_ACCOUNTS_FILE": str(path)}


@contextlib.asynccontextmanager
async def client_as(url: str, token: str, mode: str = "2026-07-28", **options: Any) -> AsyncIterator[Client]:
    """A client (of era `mode`) of the HTTP server at `url` sending `token` as its bearer token."""
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=60) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode, **options) as client,
    ):
        yield client


async def tool_names(client: Client) -> list[str]:
    return sorted(tool.name for tool in (await client.list_tools()).tools)
