"""A private GNU Mailutils imap4d 3.15 (Debian `mailutils-imap4d`) on 127.0.0.1: the minimal IMAP4rev1 server.

Installed with apt (it provides no `imap-server`, so unlike Cyrus and Courier it leaves dovecot-imapd
alone). One `imap4d` in the foreground serves a plain port (STARTTLS offered) and an implicit-TLS port
(its own TLS, `tls-mode connection`) from one config file in a short temp dir. Users are virtual-domain users
(`authorization virtdomain`): passwd-style lines in `vdom/<DOMAIN>`, read at every login, so
`add_user` only appends a line; the login name is `user@DOMAIN` (`login_name`). Each home holds a
Maildir INBOX and the usual Drafts, Sent, Trash, Junk and Archive, made on disk as a hosting panel
would make them.

What it lacks, as Debian ships it: MOVE, UIDPLUS, SORT, ESEARCH, SPECIAL-USE, CONDSTORE; no keywords
(PERMANENTFLAGS without `\\*`, a keyword in STORE is refused with BAD). APPEND keeps neither the
flags nor the date it is given (INTERNALDATE comes from the message's Received or Date header), so
the harness puts the flags on with STORE afterwards, as a mail client would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from imap_mcp.server.demo.dovecot import free_port, write_self_signed_cert
from servers import MatrixServer, ServerMissing

DOMAIN = "mailutils.test"
ADMIN = ("mailutils-probe@" + DOMAIN, "mailutils-probe-pw")
FOLDERS = ("Drafts", "Sent", "Trash", "Junk", "Archive")
IMAP4D = "/usr/sbin/imap4d"


def imap4d() -> str:
    """The imap4d binary, or `ServerMissing`."""
    found = shutil.which("imap4d") or (IMAP4D if os.path.exists(IMAP4D) else None)
    if found is None:
        raise ServerMissing("imap4d is missing: run `scripts/dev setup` (as root) to install mailutils-imap4d.")
    return found


def password_hash(password: str) -> str:
    """A SHA-512 crypt(3) hash, as the `generic` authentication compares it."""
    done = subprocess.run(
        ["openssl", "passwd", "-6", "-stdin"], input=password.encode(), capture_output=True, check=True
    )
    return done.stdout.decode().strip()


@dataclass
class Mailutils(MatrixServer):
    """One running instance; `start()`, `add_user()`, `stop()`."""

    name = "mailutils"
    prefix = ""
    delimiter = "/"
    #: APPEND drops its flags and date: the harness STOREs the flags afterwards
    keeps_append_flags = False
    #: password -> its hash (hashing costs an openssl run; every test account has the same password)
    hashes: dict[str, str] = field(init=False, default_factory=dict)

    log_name = "imap4d.log"

    def start(self, timeout: float = 30.0) -> None:
        binary = imap4d()
        self.dir = Path(tempfile.mkdtemp(prefix="mu.", dir=self.base))
        self.dir.chmod(0o755)
        self.port, self.tls_port = free_port(), free_port()
        for sub in ("vdom", "home", "tls"):
            (self.dir / sub).mkdir()
        write_self_signed_cert(self.cert_file, self.dir / "tls" / "key.pem")
        (self.dir / "imap4d.conf").write_text(self._config())
        self.add_user(*ADMIN)
        self.launch(
            [binary, f"--config-file={self.dir / 'imap4d.conf'}"],
            login=ADMIN,
            timeout=timeout,
        )

    def _config(self) -> str:
        d = self.dir
        return f"""# written by the imap-mcp tests: a throwaway imap4d on loopback only
mode daemon;
foreground yes;
pidfile {d}/imap4d.pid;
max-children 400;
logging {{ syslog no; print-severity yes; }};
auth {{ authentication generic; authorization virtdomain; }};
virtdomain {{ passwd-dir {d}/vdom; }};
login-disabled no;
tls-mode false;
tls {{ ssl-certificate-file {self.cert_file}; ssl-key-file {d}/tls/key.pem; }};
tls-file-checks {{ key-file none; cert-file none; ca-file none; }};
mailbox {{ mailbox-type maildir; mailbox-pattern "maildir://${{home}}/INBOX"; }};
namespace personal {{ prefix "" {{ directory "$home/mail"; delimiter "/"; mailbox-type maildir; }}; }};
server 127.0.0.1:{self.port} {{ tls-mode ondemand; }};
server 127.0.0.1:{self.tls_port} {{ tls-mode connection; }};
"""

    @staticmethod
    def login_name(user: str) -> str:
        """The name `user` logs in with: virtual-domain users are `user@DOMAIN`."""
        return f"{user}@{DOMAIN}"

    def add_user(self, username: str, password: str) -> None:
        """A login `user@DOMAIN` with its INBOX and the usual folders."""
        user = username.split("@")[0]
        home = self.dir / "home" / user
        for folder in ("INBOX", *(f"mail/{name}" for name in FOLDERS)):
            for sub in ("cur", "new", "tmp"):
                (home / folder / sub).mkdir(parents=True, exist_ok=True)
        if password not in self.hashes:
            self.hashes[password] = password_hash(password)
        uid, gid = (65534, 65534) if os.geteuid() == 0 else (os.geteuid(), os.getegid())
        with open(self.dir / "vdom" / DOMAIN, "a") as passwd:
            passwd.write(f"{user}:{self.hashes[password]}:{uid}:{gid}::{home}:/bin/false\n")
