"""deploy/: the compose file and the image, checked without a container engine.

The tests cannot count on a container engine (CI's machine has a Docker client and no daemon, and no
registry to pull base images from), so nothing here builds or starts a container. Instead:

- `compose.yaml` is read as Compose reads it (YAML with merge keys, then `${VAR}` interpolation from the
  operator's variables) and checked: the services, the watcher, the store on the postgres service, every
  port on 127.0.0.1 unless told otherwise, the same keys on the replicas and the watcher, SMTP passed on.
- The Dockerfile's USER, ENV, CMD and HEALTHCHECK are read from the file and run with the installed package
  (this venv's `imap-mcp`, first on PATH as pip puts it in the image) as an unprivileged user (`nobody`
  when the tests run as root) whose home does not exist, against the harness Dovecot: the image alone
  with its default SQLite store, and a compose replica and the watcher, with the environment compose
  gives them, sharing a real PostgreSQL.

What stands in for the container: the image's state volume is a folder made as the Dockerfile makes it
(owned by the user, 0700), the port a free one (the machine is shared), `IMAP_MCP_STORE` the private
PostgreSQL's URL (the service name `postgres` resolves only inside compose's network), and IMAP_CA_FILE the
harness's certificate (its Dovecot has its own).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pytest
import yaml
from harness import Account, ServerLog, client_as, structured, tool_names, wait_for_port
from postgres import PrivatePostgres

from imap_mcp.server.demo.dovecot import free_port

pytestmark = pytest.mark.anyio

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
REPLICAS = ("imap-mcp-1", "imap-mcp-2")
#: what an operator puts in the env file the compose file's comments describe
OPERATOR = {
    "IMAP_HOST": "imap.example.com",
    "IMAP_USERNAME": "me@example.com",
    "IMAP_PASSWORD": "mailbox-password",
    "IMAP_MCP_SEAL_KEYS": "seal-" + "s" * 40,
    "IMAP_MCP_STORE_KEYS": "store-" + "k" * 40,
    "IMAP_MCP_AUTH_TOKENS": "token-" + "t" * 42,
    "POSTGRES_PASSWORD": "p" * 48,
}
#: the home Docker gives a user whose passwd entry names none that exists
NO_HOME = "/nonexistent"
VENV_BIN = Path(sys.executable).parent


# --- compose.yaml, read as Compose reads it ---


class MissingVariable(Exception):
    """A `${NAME:?message}` whose variable is unset: Compose refuses the whole file with the message."""


_VARIABLE = re.compile(
    r"\$(?:\$|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<word>[^}]*))?\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


def interpolate(text: str, variables: Mapping[str, str]) -> str:
    """`text` with `$$`, `$NAME`, `${NAME}`, `${NAME:-default}`, `${NAME-default}`, `${NAME:?message}`,
    `${NAME?message}`, `${NAME:+other}` and `${NAME+other}` replaced as Compose replaces them."""

    def value(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group("name") or match.group("bare")
        op, word, found = match.group("op"), match.group("word") or "", variables.get(name)
        missing = found is None or (found == "" and op is not None and op.startswith(":"))
        if op in (":-", "-"):
            return word if missing else str(found)
        if op in (":?", "?"):
            if missing:
                raise MissingVariable(f"{name}: {word}")
            return str(found)
        if op in (":+", "+"):
            return "" if missing else word
        return found or ""

    return _VARIABLE.sub(value, text)


def _interpolated(node: Any, variables: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return interpolate(node, variables)
    if isinstance(node, dict):
        return {key: _interpolated(value, variables) for key, value in node.items()}
    if isinstance(node, list):
        return [_interpolated(item, variables) for item in node]
    return node


def compose(variables: Mapping[str, str] = OPERATOR) -> dict[str, Any]:
    """deploy/compose.yaml as Compose sees it with `variables` set (merge keys resolved, every value interpolated)."""
    document = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    assert isinstance(document, dict)
    return _interpolated(document, variables)  # type: ignore[no-any-return]


def environment(service: Mapping[str, Any]) -> dict[str, str]:
    """A service's environment, from the map or the list form."""
    raw = service.get("environment", {})
    pairs = dict(item.split("=", 1) for item in raw) if isinstance(raw, list) else raw
    return {key: "" if value is None else str(value) for key, value in pairs.items()}


def published(spec: str | Mapping[str, Any]) -> tuple[str, str, str]:
    """(host address, host port, container port) of a `ports` entry, short or long form."""
    if isinstance(spec, Mapping):
        return str(spec.get("host_ip", "")), str(spec.get("published", "")), str(spec["target"])
    parts = spec.split("/")[0].rsplit(":", 2)
    address, host_port = ("", *parts)[-3:-1] if len(parts) > 1 else ("", "")
    return address, host_port, parts[-1]


def without(*names: str) -> dict[str, str]:
    return {key: value for key, value in OPERATOR.items() if key not in names}


def test_compose_runs_two_replicas_behind_nginx_a_watcher_and_postgresql() -> None:
    services = compose()["services"]
    assert set(services) == {*REPLICAS, "watcher", "postgres", "balancer"}
    for name in (*REPLICAS, "watcher"):
        assert services[name]["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    for name in REPLICAS:
        assert "command" not in services[name]  # the image's CMD: imap-mcp serve
    assert services["watcher"]["command"] == ["imap-mcp", "watch"]
    assert services["watcher"]["healthcheck"] == {"disable": True}  # the image's check asks an HTTP server
    assert services["balancer"]["image"].startswith("nginx:")
    assert set(services["balancer"]["depends_on"]) == set(REPLICAS)


def test_the_store_is_the_postgres_service_which_replicas_and_watcher_wait_for() -> None:
    document = compose()
    services = document["services"]
    postgres = services["postgres"]
    database = environment(postgres)
    for name in (*REPLICAS, "watcher"):
        env = environment(services[name])
        url = urlsplit(env["IMAP_MCP_STORE"])
        assert url.scheme == "postgresql"
        assert url.hostname == "postgres" and (url.port or 5432) == 5432
        assert url.username == database["POSTGRES_USER"] and url.path == "/" + database["POSTGRES_DB"]
        assert url.password is None  # the password is PGPASSWORD, which libpq reads
        assert env["PGPASSWORD"] == database["POSTGRES_PASSWORD"] == OPERATOR["POSTGRES_PASSWORD"]
        assert services[name]["depends_on"] == {"postgres": {"condition": "service_healthy"}}
    assert postgres["image"].startswith("postgres:")
    assert postgres["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]
    volume, _, mount = postgres["volumes"][0].partition(":")
    assert volume in document["volumes"] and mount == "/var/lib/postgresql/data"
    # another PostgreSQL (one the replicas on other hosts share) is the operator's to name
    elsewhere = "postgresql://imapmcp@db.example.com/imapmcp"
    assert environment(compose({**OPERATOR, "IMAP_MCP_STORE": elsewhere})["services"]["watcher"])["IMAP_MCP_STORE"] == (
        elsewhere
    )


def test_every_port_is_published_on_loopback_unless_told_otherwise() -> None:
    ports = {
        name: [published(spec) for spec in service.get("ports", [])] for name, service in compose()["services"].items()
    }
    assert ports["balancer"] == [("127.0.0.1", "8080", "8080")]
    assert all(address == "127.0.0.1" for specs in ports.values() for address, _, _ in specs), ports
    told = compose({**OPERATOR, "IMAP_MCP_BIND": "0.0.0.0"})["services"]["balancer"]["ports"]
    assert [published(spec) for spec in told] == [("0.0.0.0", "8080", "8080")]


def test_replicas_and_watcher_share_the_keys_which_are_required() -> None:
    services = compose()["services"]
    for name in (*REPLICAS, "watcher"):
        env = environment(services[name])
        assert env["IMAP_MCP_SEAL_KEYS"] == OPERATOR["IMAP_MCP_SEAL_KEYS"]
        assert env["IMAP_MCP_STORE_KEYS"] == OPERATOR["IMAP_MCP_STORE_KEYS"]
    for name in REPLICAS:
        env = environment(services[name])
        assert env["IMAP_MCP_AUTH_TOKENS"] == OPERATOR["IMAP_MCP_AUTH_TOKENS"]
        assert env["IMAP_MCP_LEGACY_HTTP"] == "stateless"
    for variable in OPERATOR:
        with pytest.raises(MissingVariable, match=f"^{variable}: set {variable}"):
            compose(without(variable))


def test_smtp_settings_pass_through_and_sending_is_off_without_them() -> None:
    smtp = {
        "SMTP_HOST": "smtp.example.com",
        "SMTP_PORT": "587",
        "SMTP_TLS": "starttls",
        "SMTP_FROM": "Me <me@example.com>",
        "SMTP_USERNAME": "me",
        "SMTP_PASSWORD": "smtp-password",
    }
    for name in (*REPLICAS, "watcher"):
        env = environment(compose({**OPERATOR, **smtp})["services"][name])
        assert {key: env[key] for key in smtp} == smtp
        unset = environment(compose()["services"][name])
        assert unset["SMTP_HOST"] == "" and unset["SMTP_PORT"] == "" and unset["SMTP_PASSWORD"] == ""


def test_nginx_balances_round_robin_over_the_replicas_at_the_image_port() -> None:
    conf = (DEPLOY / "nginx.conf").read_text()
    upstream = re.search(r"upstream\s+(\w+)\s*\{(.*?)\}", conf, re.S)
    assert upstream is not None
    servers = re.findall(r"^\s*server\s+([^\s;]+)", upstream.group(2), re.M)
    assert sorted(servers) == [f"{name}:{read_dockerfile().port}" for name in REPLICAS]
    assert f"proxy_pass http://{upstream.group(1)};" in conf
    assert not re.search(r"\b(ip_hash|hash|sticky)\b", upstream.group(2))  # round robin, no sticky sessions
    listen = re.search(r"listen\s+(\d+);", conf)
    assert listen is not None
    (_, _, target), *_ = [published(spec) for spec in compose()["services"]["balancer"]["ports"]]
    assert listen.group(1) == target


# --- the Dockerfile, read from the file ---


@dataclass(frozen=True)
class Dockerfile:
    instructions: tuple[tuple[str, str], ...]

    def all(self, name: str) -> list[str]:
        return [arguments for instruction, arguments in self.instructions if instruction == name]

    @property
    def env(self) -> dict[str, str]:
        """Every ENV, in order (`ENV K=V K2=V2`, or `ENV K V`)."""
        found: dict[str, str] = {}
        for arguments in self.all("ENV"):
            words = shlex.split(arguments)
            if "=" not in words[0]:
                found[words[0]] = " ".join(words[1:])
                continue
            found.update(word.split("=", 1) for word in words)  # type: ignore[misc]
        return found

    @property
    def user(self) -> str:
        return self.all("USER")[-1]

    @property
    def cmd(self) -> list[str]:
        command = json.loads(self.all("CMD")[-1])
        assert isinstance(command, list)
        return [str(word) for word in command]

    @property
    def port(self) -> str:
        return self.cmd[self.cmd.index("--port") + 1]

    @property
    def healthcheck(self) -> str:
        """The HEALTHCHECK's command, in its shell form (Docker runs it with /bin/sh -c)."""
        _, cmd, command = self.all("HEALTHCHECK")[-1].partition(" CMD ")
        assert cmd, "the HEALTHCHECK has no CMD"
        return command

    @property
    def volumes(self) -> list[str]:
        return [path for arguments in self.all("VOLUME") for path in arguments.split()]

    @property
    def steps(self) -> list[str]:
        """Each `&&`-joined command of every RUN."""
        return [step.strip() for arguments in self.all("RUN") for step in arguments.split("&&")]


def read_dockerfile() -> Dockerfile:
    """deploy/Dockerfile's instructions, continuation lines joined and comments dropped, as Docker reads them."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for raw in (DEPLOY / "Dockerfile").read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        instruction, _, arguments = (pending + line).partition(" ")
        instructions.append((instruction.upper(), arguments.strip()))
        pending = ""
    return Dockerfile(tuple(instructions))


def test_the_image_installs_postgresql_support_and_runs_as_a_system_user_with_a_state_volume() -> None:
    dockerfile = read_dockerfile()
    steps = dockerfile.steps
    assert any(re.fullmatch(r"pip install .*'\.\[postgresql\]'", step) for step in steps), steps
    user = dockerfile.user
    assert user not in ("root", "0")
    assert any(step.startswith("useradd --system") and step.endswith(f" {user}") for step in steps), steps
    state = dockerfile.env["XDG_STATE_HOME"]  # where the default store goes when IMAP_MCP_STORE is unset
    assert dockerfile.volumes == [state]
    made = [step for step in steps if step.endswith(f" {state}")]
    assert made == [f"install -d -m 0700 -o {user} -g {user} {state}"], steps
    assert dockerfile.all("EXPOSE") == [dockerfile.port]
    assert f"http://127.0.0.1:{dockerfile.port}/healthz" in dockerfile.healthcheck


# --- the image's command, run outside a container ---


@dataclass(frozen=True)
class Container:
    """A stand-in for one container: its state volume and the user the image runs as."""

    volume: Path
    ca_file: Path

    def command(self, *words: str) -> list[str]:
        """`words` run as an unprivileged user: `nobody` when the tests run as root, else as is.

        `nobody` keeps one capability, CAP_DAC_READ_SEARCH (read and search past permissions, never write):
        the venv's interpreter may lie in a folder only root may search, such as /root. What the image's user
        writes, the store and its home, is what these tests look at, and `nobody` writes no more than it."""
        if os.geteuid() != 0:
            return list(words)
        nobody = pwd.getpwnam("nobody")
        return [
            "setpriv",
            f"--reuid={nobody.pw_uid}",
            f"--regid={nobody.pw_gid}",
            "--clear-groups",
            "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search",
            "--",
            *words,
        ]

    def env(self, dockerfile: Dockerfile, settings: Mapping[str, str]) -> dict[str, str]:
        """The container's environment: PATH with the installed `imap-mcp`, the home Docker gives a user without
        one, the Dockerfile's ENV (its state folder is this volume), then `settings` (docker run -e, compose)."""
        image = {key: str(self.volume) if key == "XDG_STATE_HOME" else value for key, value in dockerfile.env.items()}
        return {"PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin", "HOME": NO_HOME, **image, **settings}


@pytest.fixture
def container(account: Account) -> Iterator[Container]:
    root = Path(tempfile.mkdtemp(prefix="imap-mcp-container."))
    try:
        root.chmod(0o755)
        volume = root / "state"
        volume.mkdir(mode=0o700)  # as the Dockerfile makes it: install -d -m 0700 -o USER
        if os.geteuid() == 0:
            nobody = pwd.getpwnam("nobody")
            os.chown(volume, nobody.pw_uid, nobody.pw_gid)
        ca_file = root / "ca.pem"
        shutil.copyfile(account.server.cert_file, ca_file)
        ca_file.chmod(0o644)
        yield Container(volume, ca_file)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def mailbox(account: Account, container: Container) -> dict[str, str]:
    """The harness account as an operator gives it (implicit TLS, the default)."""
    return {
        "IMAP_HOST": "127.0.0.1",
        "IMAP_PORT": str(account.server.tls_port),
        "IMAP_USERNAME": account.username,
        "IMAP_PASSWORD": account.password,
        "IMAP_CA_FILE": str(container.ca_file),
    }


@contextlib.contextmanager
def running(command: list[str], env: dict[str, str], log: ServerLog) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=log.writer, stderr=log.writer)
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def serving(container: Container, env: dict[str, str], log: ServerLog) -> Iterator[tuple[str, int]]:
    """The Dockerfile's CMD on a free port instead of its own; yields (MCP URL on loopback, port)."""
    dockerfile = read_dockerfile()
    port = free_port()
    command = [str(port) if word == dockerfile.port else word for word in dockerfile.cmd]
    with running(container.command(*command), env, log) as process:
        try:
            wait_for_port(port, process)
        except (RuntimeError, TimeoutError) as exc:
            raise AssertionError(f"{exc}; its log:\n" + "\n".join(log.lines)) from None
        yield f"http://127.0.0.1:{port}/mcp", port


def healthcheck(container: Container, env: dict[str, str], port: int) -> subprocess.CompletedProcess[str]:
    """The HEALTHCHECK's command against `port`, run as Docker runs it: with /bin/sh -c, as the image's user."""
    dockerfile = read_dockerfile()
    command = dockerfile.healthcheck.replace(f":{dockerfile.port}/", f":{port}/")
    return subprocess.run(
        container.command("/bin/sh", "-c", command), env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.slow
async def test_the_image_alone_serves_as_its_user_with_its_store_in_the_state_volume(
    account: Account, container: Container
) -> None:
    """`docker run` as the Dockerfile's comments give it: no HOME to write to, the SQLite store in the volume."""
    dockerfile = read_dockerfile()
    token = "image-token-" + "x" * 36
    settings = {**mailbox(account, container), "IMAP_MCP_SEAL_KEYS": "seal-" + "y" * 40}
    refused = subprocess.run(
        container.command(*[str(free_port()) if word == dockerfile.port else word for word in dockerfile.cmd]),
        env=container.env(dockerfile, settings),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "IMAP_MCP_AUTH_TOKENS" in refused.stderr, refused.stderr

    env = container.env(dockerfile, {**settings, "IMAP_MCP_AUTH_TOKENS": token})
    with ServerLog() as log, serving(container, env, log) as (url, port):
        checked = healthcheck(container, env, port)
        assert checked.returncode == 0, checked.stderr
        async with client_as(url, token) as client:
            listed = await client.call_tool("list_mailboxes", {})
            assert structured(listed)["mailboxes"][0]["name"] == "INBOX"
            status = await client.call_tool("get_webhook_status", {})  # reads the store, making it
            assert structured(status)["state"] == "not_configured"
    store = container.volume / "imap-mcp" / "store.sqlite3"
    assert store.is_file(), sorted(str(p) for p in container.volume.rglob("*"))
    info = store.stat()
    assert info.st_uid == (pwd.getpwnam("nobody").pw_uid if os.geteuid() == 0 else os.geteuid())
    assert stat.S_IMODE(info.st_mode) == 0o600


@pytest.mark.slow
async def test_compose_replica_and_watcher_share_the_postgresql_store(
    account: Account, container: Container, postgres: PrivatePostgres
) -> None:
    """A replica and the watcher with the environment compose gives them; `webhook set` as the compose file's
    comment runs it (`run --rm watcher imap-mcp webhook set …`); all three meet in one PostgreSQL."""
    dockerfile = read_dockerfile()
    store_url = postgres.new_database()
    given = mailbox(account, container)
    ca_file = {"IMAP_CA_FILE": given.pop("IMAP_CA_FILE")}  # a file compose would mount; not in compose.yaml
    services = compose({**OPERATOR, **given, "IMAP_MCP_STORE": store_url})["services"]
    replica_env = container.env(dockerfile, {**environment(services["imap-mcp-1"]), **ca_file})
    watcher_env = container.env(dockerfile, {**environment(services["watcher"]), **ca_file})
    assert replica_env["IMAP_MCP_STORE"] == watcher_env["IMAP_MCP_STORE"] == store_url

    hook = f"http://127.0.0.1:{free_port()}/hooks/new-mail"
    saved = subprocess.run(
        container.command("imap-mcp", "webhook", "set", "--url", hook),
        env=watcher_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert saved.returncode == 0, saved.stderr
    assert saved.stdout.strip().splitlines()[-1].startswith("whsec_")

    with ServerLog() as log:
        with running(container.command(*services["watcher"]["command"]), watcher_env, log) as watcher:
            await log.line(f"watch: {account.username}@127.0.0.1:{account.server.tls_port} active")
            with psycopg.connect(store_url) as connection:
                holders = connection.execute("SELECT holder FROM watcher_leases").fetchall()
            assert [holder.split(":")[1] for (holder,) in holders] == [str(watcher.pid)]
            with serving(container, replica_env, log) as (url, _):
                async with client_as(url, OPERATOR["IMAP_MCP_AUTH_TOKENS"]) as client:
                    status = structured(await client.call_tool("get_webhook_status", {}))
                    assert (status["state"], status["url_host"]) == ("active", "127.0.0.1")
                    tools = await tool_names(client)
        assert "list_mailboxes" in tools
        assert "send_message" not in tools and "reply_to_message" not in tools  # SMTP_HOST empty: no sending
    assert list(container.volume.iterdir()) == []  # nothing went to SQLite
