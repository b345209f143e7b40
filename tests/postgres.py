"""A private PostgreSQL cluster on loopback for the tests, from the Debian package (`scripts/dev` installs it).

Started once per session (per xdist worker) in a temporary directory, trusting loopback logins
of its one user; each test gets a database of its own. PostgreSQL refuses to run as root, so
as root (CI) the cluster runs as the package's `postgres` user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import psycopg

from imap_mcp.server.demo.dovecot import free_port

USER = "imapmcp"


def _binary(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda p: int(p.split("/")[4]))
    if not found:
        raise RuntimeError("PostgreSQL is not installed: run scripts/dev setup (it installs the postgresql package)")
    return found[-1]


class PrivatePostgres:
    def __init__(self) -> None:
        self.base = Path(tempfile.mkdtemp(prefix="imap-mcp-pg.", dir=os.environ.get("DOVECOT_TMPDIR", "/tmp")))
        self.port = free_port()
        self.data = self.base / "data"

    def _as_owner(self, *command: str) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(self.base, owner.pw_uid, owner.pw_gid)
        self._as_owner(_binary("initdb"), "-D", str(self.data), "-U", USER, "--auth=trust", "-E", "UTF8")
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.base} -c fsync=off -c max_connections=200"
        self._as_owner(
            _binary("pg_ctl"), "-D", str(self.data), "-o", options, "-l", str(self.base / "log"), "-w", "start"
        )

    def stop(self) -> None:
        try:
            self._as_owner(_binary("pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """The URL of a new, empty database."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return self.url(name)
