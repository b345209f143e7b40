"""imap-mcp installed the way users install it: a wheel built from this working tree, in a fresh venv.

The sdist is built from a copy of the tree's files (tracked and new, not ignored ones), so nothing
from an earlier build or the editable install can hide a missing module or data file, and the
wheel from that sdist, so a file missing from either fails the tests below; the wheel is
installed with its dependencies into a venv outside the checkout, and every command runs from a
directory outside it. Built once per test run (under a lock, should two workers ever need it).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from harness import MODES, Account, Person, http_server, structured, wait_for_port
from imapclient import IMAPClient
from mcp import Client, StdioServerParameters

from imap_mcp.server.demo.dovecot import free_port

#: one worker runs them all (`--dist loadgroup`), so one worker builds and the other never waits for it
pytestmark = [pytest.mark.anyio, pytest.mark.slow, pytest.mark.xdist_group("installed")]

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Installed:
    venv: Path
    #: an empty directory outside the checkout, the working directory of every command
    cwd: Path

    @property
    def command(self) -> str:
        return str(self.venv / "bin" / "imap-mcp")

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def env(self, base: dict[str, str]) -> dict[str, str]:
        """`base` without anything that would lead Python back to the checkout or the dev venv."""
        return {k: v for k, v in base.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}

    def run(self, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.command, *args], env=self.env(env), cwd=self.cwd, capture_output=True, text=True, timeout=120
        )


def working_tree_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def build_and_install(into: Path) -> None:
    """sdist from a copy of the working tree, the wheel from that sdist (as pip builds one), then the venv."""
    source, dist = into / "src", into / "dist"
    for name in working_tree_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "build", "-q", "--sdist", "--outdir", str(dist), str(source)], check=True)
    [sdist] = dist.glob("imap_mcp-*.tar.gz")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", str(sdist), "-w", str(dist)], check=True, cwd=into)
    [wheel] = dist.glob("imap_mcp-*.whl")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(into / "venv")], check=True, cwd=into)
    python = str(into / "venv" / "bin" / "python")
    # with its dependencies, from pip's cache after the first run; no .pyc compiling up front (cheaper)
    subprocess.run([*pip, "--python", python, "install", "--no-compile", str(wheel)], check=True, cwd=into)
    (into / "cwd").mkdir()
    (into / "done").touch()


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    return installed_venv(tmp_path_factory)


def installed_venv(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """The venv with the wheel installed, built by the first module of the run that asks (`test_installed_cli` too)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # one directory per run either way
    into = shared / "installed-imap-mcp"
    with open(shared / "installed-imap-mcp.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (into / "done").exists():
            shutil.rmtree(into, ignore_errors=True)
            build_and_install(into)
    return Installed(into / "venv", into / "cwd")


def test_every_module_and_data_file_is_installed_and_comes_from_the_venv(installed: Installed) -> None:
    script = (
        "import importlib, json, pkgutil\n"
        "import imap_mcp.server, imap_mcp.protocol, imap_mcp.sealing, imap_mcp.spec_fixtures\n"
        "from importlib.resources import files\n"
        "names = []\n"
        "for top in (imap_mcp.server, imap_mcp.protocol, imap_mcp.sealing, imap_mcp.spec_fixtures):\n"
        "    names.append(top.__name__)\n"
        "    for info in pkgutil.walk_packages(top.__path__, top.__name__ + '.'):\n"
        "        if info.name != 'imap_mcp.server.__main__':\n"
        "            importlib.import_module(info.name)\n"
        "            names.append(info.name)\n"
        "wire = sorted(p.name for p in (files('imap_mcp.spec_fixtures') / 'wire').iterdir())\n"
        "print(json.dumps({'file': imap_mcp.server.__file__, 'modules': names, 'wire': wire}))\n"
    )
    done = subprocess.run(
        [installed.python, "-c", script],
        env=installed.env(dict(os.environ)),
        cwd=installed.cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["file"].startswith(str(installed.venv))
    expected = set()
    for prefix, folder in (
        ("imap_mcp.server", "server"),
        ("imap_mcp.protocol", "protocol"),
        ("imap_mcp.sealing", "sealing"),
        ("imap_mcp.spec_fixtures", "spec-fixtures"),
    ):
        for module in (ROOT / folder).rglob("*.py"):
            parts = module.relative_to(ROOT / folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            if parts != ("__main__",):
                expected.add(".".join([prefix, *parts]))
    assert set(found["modules"]) == expected
    assert found["wire"] == sorted(p.name for p in (ROOT / "spec-fixtures" / "wire").glob("*.json"))


def test_the_installed_command_knows_its_version_and_each_command(installed: Installed) -> None:
    from importlib.metadata import version

    assert installed.run(dict(os.environ), "--version").stdout.strip() == f"imap-mcp {version('imap-mcp')}"
    for command in ("stdio", "serve", "check", "auth", "demo"):
        done = installed.run(dict(os.environ), command, "--help")
        assert done.returncode == 0 and f"usage: imap-mcp {command}" in done.stdout


def test_the_installed_metadata_carries_the_classifiers_and_project_urls(installed: Installed) -> None:
    script = (
        "import json\n"
        "from importlib.metadata import metadata\n"
        "m = metadata('imap-mcp')\n"
        "print(json.dumps({key: m.get_all(key) or [] for key in ('Summary', 'Requires-Python', 'Classifier', "
        "'Project-URL')}))\n"
    )
    done = subprocess.run(
        [installed.python, "-c", script], env=installed.env(dict(os.environ)), cwd=installed.cwd, capture_output=True
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert found["Summary"] == [project["description"]]
    assert found["Requires-Python"] == [project["requires-python"]]
    assert found["Classifier"] == project["classifiers"]
    assert "Topic :: Communications :: Email :: Post-Office :: IMAP" in found["Classifier"]
    assert found["Project-URL"] == [f"{name}, {url}" for name, url in project.get("urls", {}).items()]


def test_the_installed_check_is_ready_on_the_test_account(installed: Installed, account: Account) -> None:
    done = installed.run(account.env(), "check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("imap-mcp check: ready")


@pytest.mark.parametrize("mode", MODES)
async def test_the_installed_command_serves_stdio_on_both_eras(
    installed: Installed, account: Account, mode: str
) -> None:
    params = StdioServerParameters(
        command=installed.command, args=["stdio"], env=installed.env(account.env()), cwd=installed.cwd
    )
    async with Client(params, mode=mode) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        names = {m["name"] for m in structured(await client.call_tool("list_mailboxes", {}))["mailboxes"]}
    assert {"INBOX", "Sent", "Projects/Entwürfe"} <= names


@pytest.mark.parametrize("mode", MODES)
async def test_the_installed_command_serves_http_on_both_eras(
    installed: Installed, account: Account, mode: str
) -> None:
    env = installed.env(account.env())
    with http_server(env, command=(installed.command,), cwd=installed.cwd) as url:
        async with Client(url, mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            names = {m["name"] for m in structured(await client.call_tool("list_mailboxes", {}))["mailboxes"]}
    assert {"INBOX", "Sent", "Projects/Entwürfe"} <= names


@dataclass(frozen=True)
class Demo:
    url: str
    http_entry: dict[str, object]
    stdio_entry: dict[str, object]


@contextlib.contextmanager
def running_demo(installed: Installed) -> Iterator[Demo]:
    """`imap-mcp demo` from the venv; yields what it printed, stops it and checks it exited cleanly."""
    port = free_port()
    env = installed.env({k: v for k, v in os.environ.items() if not k.startswith(("IMAP_", "SMTP_"))})
    process = subprocess.Popen(
        [installed.command, "demo", "--port", str(port)],
        env=env,
        cwd=installed.cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        wait_for_port(port, process, timeout=120)
        printed = []
        for line in process.stdout:  # type: ignore[union-attr]
            printed.append(line)
            if "Press Ctrl-C" in line:
                break
        text = "".join(printed)
        http_entry, stdio_entry = (json.loads(b)["mcpServers"] for b in re.findall(r"^\{.*?^\}", text, re.S | re.M))
        url = printed[0].rsplit(" at ", 1)[1].strip()
        yield Demo(url, http_entry["imap-demo"], stdio_entry["imap-demo-stdio"])
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert process.returncode == 0


def mailbox_subjects(env: dict[str, str], mailbox: str) -> list[str]:
    """The subjects in `mailbox` of the demo account, read directly over IMAP with the entry's settings."""
    context = ssl.create_default_context(cafile=env["IMAP_CA_FILE"])
    client = IMAPClient(env["IMAP_HOST"], int(env["IMAP_PORT"]), ssl_context=context, timeout=30)
    try:
        client.login(env["IMAP_USERNAME"], env["IMAP_PASSWORD"])
        client.select_folder(mailbox, readonly=True)
        fetched = client.fetch(client.search(["ALL"]), ["ENVELOPE"]).values()
        return [found[b"ENVELOPE"].subject.decode() for found in fetched]
    finally:
        client.logout()


async def test_the_installed_demo_serves_http_and_its_stdio_entry_sends_into_the_demo_mailbox(
    installed: Installed,
) -> None:
    with running_demo(installed) as demo:
        assert demo.http_entry == {"type": "http", "url": demo.url}
        async with Client(demo.url, mode="2026-07-28") as client:
            names = {m["name"] for m in structured(await client.call_tool("list_mailboxes", {}))["mailboxes"]}
        assert {"INBOX", "Sent", "Archive", "Projects/Entwürfe"} <= names

        entry = demo.stdio_entry
        assert entry["command"] == installed.command and entry["args"] == ["stdio"]
        env: dict[str, str] = entry["env"]  # type: ignore[assignment]
        assert Path(env["IMAP_CA_FILE"]).is_file()
        check = installed.run(dict(os.environ, **env), "check")
        assert check.returncode == 0, check.stdout
        params = StdioServerParameters(
            command=installed.command, args=["stdio"], env=installed.env(dict(os.environ, **env)), cwd=installed.cwd
        )
        message = {"to": ["alice@example.com"], "subject": "Hello from the demo", "body": "It arrives.\n"}
        async with Client(params, mode="2026-07-28", elicitation_callback=Person()) as client:
            sent = structured(await client.call_tool("send_message", message))
        assert sent["status"] == "sent" and sent["saved_to_sent"]
        assert "Hello from the demo" in mailbox_subjects(env, "INBOX")
        assert "Hello from the demo" in mailbox_subjects(env, "Sent")
