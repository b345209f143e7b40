"""A private Cyrus IMAP 3.6 (Debian `cyrus-imapd`, unpacked) on 127.0.0.1, as Fastmail-style hosts run it.

Configured like Cyrus 3's defaults: the alternate namespace (personal mailboxes at the top level,
`/` as the delimiter), SPECIAL-USE on the mailboxes it creates at a user's first login (Drafts,
Sent, Trash, Junk, Archive), delayed mailbox deletion. Users live in a private sasldb (PLAIN and
LOGIN over the wire); `add_user` adds one.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from imap_mcp.server.demo.dovecot import free_port, write_self_signed_cert
from servers import MatrixServer, unpacked

ADMIN = ("cyrus-admin", "cyrus-admin-pw")
AUTOCREATED = ("Drafts", "Sent", "Trash", "Junk", "Archive")


@dataclass
class Cyrus(MatrixServer):
    """One running instance; `start()`, `add_user()`, `stop()`."""

    name = "cyrus"
    #: the personal namespace: prefix and hierarchy delimiter
    prefix = ""
    delimiter = "/"

    @property
    def _sasldb(self) -> Path:
        return self.dir / "sasldb2"

    log_name = "master.log"

    def start(self, timeout: float = 30.0) -> None:
        master = unpacked("usr/lib/cyrus/bin/master")
        self.dir = Path(tempfile.mkdtemp(prefix="cy.", dir=self.base))
        self.dir.chmod(0o755)
        self.port, self.tls_port = free_port(), free_port()
        for sub in ("conf", "spool", "run", "tls"):
            (self.dir / sub).mkdir()
        write_self_signed_cert(self.cert_file, self.dir / "tls" / "key.pem")
        (self.dir / "imapd.conf").write_text(self._imapd_conf())
        (self.dir / "cyrus.conf").write_text(self._cyrus_conf())
        self.add_user(*ADMIN)
        if os.geteuid() == 0:
            for root, dirs, files in os.walk(self.dir):
                for name in [root, *(os.path.join(root, x) for x in dirs + files)]:
                    shutil.chown(name, user="nobody")
        self.launch(
            [
                str(master),
                "-C",
                str(self.dir / "imapd.conf"),
                "-M",
                str(self.dir / "cyrus.conf"),
                "-p",
                str(self.dir / "run" / "master.pid"),
            ],
            env=self._env(),
            login=ADMIN,
            timeout=timeout,
        )

    def _env(self) -> dict[str, str]:
        return dict(os.environ, LD_LIBRARY_PATH=str(unpacked("usr/lib/x86_64-linux-gnu")))

    def _imapd_conf(self) -> str:
        d = self.dir
        user = "nobody" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        folders = " | ".join(AUTOCREATED)
        special_use = "\n".join(f"xlist-{name.lower()}: {name}" for name in AUTOCREATED)
        return f"""# written by the imap-mcp tests: a throwaway Cyrus on loopback only
configdirectory: {d}/conf
defaultpartition: default
partition-default: {d}/spool
proc_path: {d}/run/proc
mboxname_lockpath: {d}/run/lock
lmtpsocket: {d}/run/lmtp
idlesocket: {d}/run/idle
notifysocket: {d}/run/notify
cyrus_user: {user}
admins: {ADMIN[0]}
altnamespace: yes
unixhierarchysep: yes
allowplaintext: yes
sasl_pwcheck_method: auxprop
sasl_auxprop_plugin: sasldb
sasl_sasldb_path: {self._sasldb}
sasl_mech_list: PLAIN LOGIN
autocreate_quota: 0
autocreate_inbox_folders: {folders}
autocreate_subscribe_folders: {folders}
{special_use}
specialusealways: yes
tls_server_cert: {self.cert_file}
tls_server_key: {d}/tls/key.pem
maxlogins_per_user: 0
# answer a failed login at once (Cyrus waits 3 s by default), as the tests' Dovecot does (auth_failure_delay = 0)
failedloginpause: 0
# keep raw 8-bit header bytes as appended (Cyrus would turn each into 'X'), as Fastmail keeps them
munge8bit: no
# only \\All is protected from DELETE (no mailbox has it; Cyrus 3.6 protects Sent, Trash... by default),
# so tests can delete and re-create Archive as on other servers
specialuse_protect: \\All
"""

    def _cyrus_conf(self) -> str:
        bin_dir = unpacked("usr/lib/cyrus/bin")
        conf = self.dir / "imapd.conf"
        return f"""START {{
  recover cmd="{bin_dir}/ctl_cyrusdb -C {conf} -r"
}}
SERVICES {{
  imap cmd="{bin_dir}/imapd -C {conf}" listen="127.0.0.1:{self.port}" prefork=1
  imaps cmd="{bin_dir}/imapd -s -C {conf}" listen="127.0.0.1:{self.tls_port}" prefork=1
}}
EVENTS {{
}}
DAEMON {{
}}
"""

    def add_user(self, username: str, password: str) -> None:
        """A login for `username`; Cyrus creates its mailboxes at the first login."""
        subprocess.run(
            [str(unpacked("usr/sbin/saslpasswd2")), "-f", str(self._sasldb), "-p", "-c", username],
            input=password.encode(),
            env=self._env(),
            check=True,
            capture_output=True,
        )
        if os.geteuid() == 0:
            shutil.chown(self._sasldb, user="nobody")
