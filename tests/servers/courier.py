"""A private Courier-IMAP 5.0 (Debian `courier-imap`, unpacked) on 127.0.0.1, as older hosting runs it.

Courier's binaries look for their files at fixed Debian paths (`/etc/courier`, `/usr/lib/courier-authlib`,
the authdaemon socket in `/run/courier`), so the server runs in a private mount namespace
(`unshare --mount`) where the unpacked tree is overlaid on `/usr` and `/etc`, this instance's
own config dir is bound on `/etc/courier` and a fresh tmpfs on `/run`; nothing outside changes.
Users live in a userdb (authdaemond's `authuserdb`), rebuilt by `add_user`, which also makes the
user's Maildir++ with `INBOX.Drafts`, `INBOX.Sent`, `INBOX.Trash`, `INBOX.Junk` and
`INBOX.Archive`, as a hosting control panel would. Capabilities as Debian ships them: no MOVE,
no SPECIAL-USE, no ESEARCH, no CONDSTORE; personal mailboxes must live under `INBOX.`.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from imap_mcp.server.demo.dovecot import free_port, write_self_signed_cert
from servers import UNPACKED, MatrixServer, unpacked

ADMIN = ("courier-probe", "courier-probe-pw")
FOLDERS = ("Drafts", "Sent", "Trash", "Junk", "Archive")
#: Debian's /etc/courier/imapd defaults
CAPABILITY = "IMAP4rev1 UIDPLUS CHILDREN NAMESPACE THREAD=ORDEREDSUBJECT THREAD=REFERENCES SORT QUOTA IDLE"
IMAPD_ENV = {
    "IMAP_CAPABILITY": CAPABILITY,
    "IMAP_CAPABILITY_TLS": f"{CAPABILITY} AUTH=PLAIN",
    "IMAP_KEYWORDS": "1",
    "IMAP_ACL": "1",
    "IMAP_PROXY": "0",
    "IMAP_IDLE_TIMEOUT": "60",
    "IMAP_MAILBOX_SANITY_CHECK": "1",
    "IMAP_DISABLETHREADSORT": "0",
    "IMAP_CHECK_ALL_FOLDERS": "0",
    "IMAP_UMASK": "022",
    "IMAP_USELOCKS": "1",
    "IMAP_ENHANCEDIDLE": "0",
    "IMAP_TRASHFOLDERNAME": "Trash",
    "IMAP_EMPTYTRASH": "",
    "IMAP_MOVE_EXPUNGE_TO_TRASH": "0",
    "HEADERFROM": "X-IMAP-Sender",
    "MAILDIRPATH": "Maildir",
    "IMAP_STARTTLS": "YES",
    "COURIERTLS": "/usr/bin/couriertls",
    "TLS_PROTOCOL": "TLS1_2:",
    "TLS_VERIFYPEER": "NONE",
}
TCPD = "/usr/sbin/couriertcpd -address=127.0.0.1 -nodnslookup -noidentlookup -maxprocs=400 -maxperip=400"
LOGIN = "/usr/lib/courier/courier/imaplogin /usr/bin/imapd Maildir"


@dataclass
class Courier(MatrixServer):
    """One running instance; `start()`, `add_user()`, `stop()`."""

    name = "courier"
    #: killed at once: `unshare --fork` ignores SIGTERM, and so does bash as the namespace's init, so a
    #: SIGTERM only waited out the grace (5 s per stop); nothing of the server's needs a clean exit
    stop_grace: float = field(init=False, default=0)
    prefix = "INBOX."
    delimiter = "."
    #: userdb entries (uid, home, Maildir) and userdbshadow entries (password hash) by login
    users: dict[str, str] = field(init=False, default_factory=dict)
    passwords: dict[str, str] = field(init=False, default_factory=dict)

    log_name = "courier.log"

    def start(self, timeout: float = 30.0) -> None:
        unpacked("usr/bin/imapd")
        self.dir = Path(tempfile.mkdtemp(prefix="co.", dir=self.base))
        self.dir.chmod(0o755)
        self.port, self.tls_port = free_port(), free_port()
        for sub in ("etc", "home", "tls"):
            (self.dir / sub).mkdir()
        write_self_signed_cert(self.cert_file, self.dir / "tls" / "key.pem")
        pem = self.dir / "tls" / "both.pem"
        pem.write_bytes((self.dir / "tls" / "key.pem").read_bytes() + self.cert_file.read_bytes())
        (self.dir / "etc" / "authdaemonrc").write_text(
            'authmodulelist="authuserdb"\ndaemons=5\nauthdaemonvar=/run/courier/authdaemon\nDEBUG_LOGIN=0\n'
            'DEFAULTOPTIONS=""\nLOGGEROPTS=""\n'
        )
        self.add_user(*ADMIN)
        (self.dir / "start.sh").write_text(self._start_script(pem))
        # a PID namespace too: couriertcpd leaves the process group, but nothing outlives the namespace's init
        unshare = ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child"]
        if os.geteuid() != 0:
            unshare[1:1] = ["--user", "--map-root-user"]
        self.launch(
            [*unshare, "bash", str(self.dir / "start.sh")],
            env={
                "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
                **IMAPD_ENV,
                "TLS_CERTFILE": str(pem),
                "GAM_CLIENT_ID": f"imap-mcp-{self.port}",  # this instance's own file monitor
            },
            login=ADMIN,
            timeout=timeout,
        )

    def _start_script(self, pem: Path) -> str:
        root, etc = shlex.quote(str(UNPACKED)), shlex.quote(str(self.dir / "etc"))
        layer = shlex.quote(str(self._passwd_layer()))
        return f"""set -e
mount -t overlay overlay -o lowerdir={root}/usr:/usr /usr
mount -t overlay overlay -o lowerdir={layer}:{root}/etc:/etc /etc
mount --bind {etc} /etc/courier
mount -t tmpfs tmpfs /run
mkdir -p /run/courier/authdaemon
/usr/lib/courier/courier-authlib/authdaemond &
{TCPD} {self.port} {LOGIN} &
IMAP_TLS=1 {TCPD} {self.tls_port} /usr/bin/couriertls -server -tcpd {LOGIN} &
wait
"""

    def _passwd_layer(self) -> Path:
        """/etc/passwd and /etc/group with the `courier` user (as nobody) that STARTTLS switches to."""
        layer = self.dir / "etc-layer"
        layer.mkdir()
        (layer / "passwd").write_text(
            Path("/etc/passwd").read_text() + "courier:x:65534:65534::/nonexistent:/bin/false\n"
        )
        (layer / "group").write_text(Path("/etc/group").read_text() + "courier:x:65534:\n")
        return layer

    def add_user(self, username: str, password: str) -> None:
        """A login for `username` with its Maildir++ and the usual folders, then the userdb rebuilt."""
        home = self.dir / "home" / username
        for folder in ("", *(f".{name}" for name in FOLDERS)):
            for sub in ("cur", "new", "tmp"):
                (home / "Maildir" / folder / sub).mkdir(parents=True, exist_ok=True)
            if folder:
                (home / "Maildir" / folder / "maildirfolder").touch()
        # a uid with a name: Courier's file monitor (libgamin) waits a second per command for one without
        uid, gid = (65534, 65534) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
        if os.geteuid() == 0:
            for root, dirs, files in os.walk(home):
                for name in [root, *(os.path.join(root, x) for x in dirs + files)]:
                    os.chown(name, uid, gid)
        self.users[username] = f"uid={uid}|gid={gid}|home={home}|mail={home}/Maildir|_="
        digest = base64.b64encode(hashlib.sha256(password.encode()).digest()).decode()
        self.passwords[username] = f"systempw={{SHA256}}{digest}"
        self._make_dat("userdb", self.users)
        self._make_dat("userdbshadow", self.passwords)

    def _make_dat(self, name: str, entries: dict[str, str]) -> None:
        """Write /etc/courier/NAME.dat as makeuserdb does (makedatprog: `key<TAB>value` lines, then `.`)."""
        etc = self.dir / "etc"
        lines = "".join(f"{key}\t{value}\n" for key, value in entries.items()) + ".\n"
        subprocess.run(
            [
                str(unpacked("usr/lib/courier/courier-authlib/makedatprog")),
                "-",
                str(etc / f"{name}.tmp"),
                str(etc / f"{name}.dat"),
            ],
            input=lines.encode(),
            env=dict(os.environ, LD_LIBRARY_PATH=str(unpacked("usr/lib"))),
            check=True,
            capture_output=True,
        )
