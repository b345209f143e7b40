"""A private, throwaway Dovecot on 127.0.0.1 — for `imap-mcp demo` and the test harness.

It runs `dovecot -F` from a short temp dir (config, TLS certificate, passwd-file users,
Maildir homes), listens on two free loopback ports (plain with STARTTLS, and implicit TLS),
and is stopped by signalling its whole process group. Nothing outside that dir is touched,
except that `ensure_installed()` may install the Debian package `dovecot-imapd` when the
caller is root.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import imaplib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from imap_mcp.protocol.errors import ImapMcpError

DOVECOT_CANDIDATES = ("dovecot", "/usr/sbin/dovecot")
SPECIAL_USE = {"Drafts": "\\Drafts", "Sent": "\\Sent", "Trash": "\\Trash", "Junk": "\\Junk", "Archive": "\\Archive"}
#: Dovecot 2.3 post-login capabilities; `hide_move` advertises them without MOVE and UIDPLUS
DEFAULT_CAPS = (
    "IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE SORT SORT=DISPLAY THREAD=REFERENCES THREAD=REFS "
    "THREAD=ORDEREDSUBJECT MULTIAPPEND URL-PARTIAL CATENATE UNSELECT CHILDREN NAMESPACE UIDPLUS "
    "LIST-EXTENDED I18NLEVEL=1 CONDSTORE QRESYNC ESEARCH ESORT SEARCHRES WITHIN CONTEXT=SEARCH LIST-STATUS "
    "BINARY MOVE SNIPPET=FUZZY PREVIEW=FUZZY PREVIEW STATUS=SIZE SAVEDATE LITERAL+ NOTIFY SPECIAL-USE"
)


class DovecotError(ImapMcpError, RuntimeError):
    """Dovecot is missing or did not start; the message says what to do."""


def find_dovecot() -> str | None:
    for candidate in DOVECOT_CANDIDATES:
        path = shutil.which(candidate)
        if path:
            return path
    return None


def ensure_installed() -> str:
    """The dovecot binary; installs `dovecot-imapd` with apt when missing and running as root."""
    found = find_dovecot()
    if found:
        return found
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise DovecotError(
            "Dovecot is not installed. Install it with: sudo apt-get install -y dovecot-imapd "
            "(the demo runs its own private instance; the system service is not used)."
        )
    _apt_install(["dovecot-imapd"])
    found = find_dovecot()
    if not found:
        raise DovecotError("apt-get installed dovecot-imapd, but no dovecot binary was found.")
    return found


def _apt_install(packages: list[str]) -> None:
    """apt-get install, without letting the package start a system-wide service."""
    policy = Path("/usr/sbin/policy-rc.d")
    made_policy = not policy.exists()
    if made_policy:
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    try:
        subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
        subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages], check=True, env=env)
    except subprocess.CalledProcessError as exc:
        raise DovecotError(f"Installing {' '.join(packages)} with apt-get failed (exit {exc.returncode}).") from None
    finally:
        if made_policy:
            policy.unlink(missing_ok=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_self_signed_cert(cert_path: Path, key_path: Path) -> None:
    """An EC P-256 certificate for localhost and 127.0.0.1, valid for a week; its key readable by its owner only."""
    import ipaddress

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=7))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    # readable by its owner only, from the first byte (not written world-readable, then narrowed)
    with os.fdopen(os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
        out.write(private)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


@dataclass
class Dovecot:
    """One running instance. Use as a context manager, or call `start()` and `stop()`."""

    users: dict[str, str] = field(default_factory=lambda: {"alice": "alice-pw"})
    any_user_password: str | None = None
    hide_move: bool = False
    #: False: no mailbox is created or marked with a SPECIAL-USE attribute, and SPECIAL-USE is not advertised
    special_use: bool = True
    public_namespace: bool = False
    extra_config: list[str] = field(default_factory=list)
    #: an RFC 7662 introspection endpoint: then XOAUTH2 and OAUTHBEARER logins are checked against it
    oauth2_introspection_url: str | None = None
    base: Path | None = None
    dir: Path = field(init=False)
    port: int = field(init=False, default=0)
    tls_port: int = field(init=False, default=0)
    process: subprocess.Popen[bytes] | None = field(init=False, default=None)

    @property
    def cert_file(self) -> Path:
        return self.dir / "tls" / "cert.pem"

    @property
    def conf_file(self) -> Path:
        return self.dir / "dovecot.conf"

    @property
    def log_file(self) -> Path:
        return self.dir / "dovecot.log"

    def maildir(self, user: str) -> Path:
        return self.dir / "home" / user / "Maildir"

    def __enter__(self) -> Dovecot:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 20.0) -> None:
        binary = ensure_installed()
        parent = self.base or Path(tempfile.gettempdir())
        # unix sockets live below DIR/run: keep the path short (108-byte limit)
        self.dir = Path(tempfile.mkdtemp(prefix="dv.", dir=parent))
        self.dir.chmod(0o755)
        self.port, self.tls_port = free_port(), free_port()
        while self.tls_port == self.port:
            self.tls_port = free_port()
        self._write_files()
        self.process = subprocess.Popen(
            [binary, "-F", "-c", str(self.conf_file)],
            stdin=subprocess.DEVNULL,
            stdout=open(self.dir / "dovecot.stdout", "ab"),  # noqa: SIM115 - owned by the child
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise

    def _mail_ids(self) -> tuple[int, int, str, str]:
        """(mail uid, mail gid, internal user, login user): Dovecot refuses mail access as root."""
        if os.geteuid() == 0:
            return 5000, 5000, "dovecot", "dovenull"
        import pwd

        me = pwd.getpwuid(os.geteuid()).pw_name
        return os.geteuid(), os.getegid(), me, me

    def _write_files(self) -> None:
        uid, gid, internal, login = self._mail_ids()
        for sub in ("run", "state", "home", "tls"):
            (self.dir / sub).mkdir()
        write_self_signed_cert(self.cert_file, self.dir / "tls" / "key.pem")
        users = self.dir / "users"
        users.write_text(
            "".join(f"{u}:{{PLAIN}}{p}:{uid}:{gid}::{self.dir / 'home' / u}::\n" for u, p in self.users.items())
        )
        if os.geteuid() == 0:
            shutil.chown(users, group=internal)
        users.chmod(0o640)
        if self.public_namespace:
            for name in ("Team", "Shared"):
                for sub in ("cur", "new", "tmp"):
                    (self.dir / "public" / name / sub).mkdir(parents=True)
        self.conf_file.write_text(self._config(internal, login, uid, gid))
        for top in ("home", "public"):
            if (self.dir / top).exists() and os.geteuid() == 0:
                for root, dirs, files in os.walk(self.dir / top):
                    for name in [root, *(os.path.join(root, x) for x in dirs + files)]:
                        os.chown(name, uid, gid)

    def _config(self, internal: str, login: str, uid: int, gid: int) -> str:
        d = self.dir
        mailboxes = "\n".join(
            f"  mailbox {name} {{\n    special_use = {flag}\n    auto = subscribe\n  }}"
            for name, flag in SPECIAL_USE.items()
            if self.special_use
        )
        any_user = ""
        if self.any_user_password:
            any_user = (
                "passdb {\n  driver = static\n"
                f"  args = password={self.any_user_password}\n  username_filter = t-*\n}}\n"
                f"userdb {{\n  driver = static\n  args = uid={uid} gid={gid} home={d}/home/%u allow_all_users=yes\n}}\n"
            )
        mechanisms, oauth2 = "plain login", ""
        if self.oauth2_introspection_url:
            mechanisms, oauth2 = "plain login xoauth2 oauthbearer", self._oauth2_config(uid, gid)
        hidden = {"MOVE", "UIDPLUS"} if self.hide_move else set()
        hidden |= set() if self.special_use else {"SPECIAL-USE"}
        caps = ""
        if hidden:
            caps = "imap_capability = " + " ".join(c for c in DEFAULT_CAPS.split() if c not in hidden)
        public = ""
        if self.public_namespace:
            public = (
                "namespace public {\n  type = public\n  separator = /\n  prefix = Public/\n"
                f"  location = maildir:{d}/public:LAYOUT=fs:INDEXPVT=~/public-pvt\n  subscriptions = no\n"
                "  list = yes\n}\n"
            )
        extra = "\n".join(self.extra_config)
        dh = "ssl_dh = </usr/share/dovecot/dh.pem" if Path("/usr/share/dovecot/dh.pem").exists() else ""
        return f"""# written by imap-mcp: a throwaway instance on loopback only
base_dir = {d}/run
state_dir = {d}/state
instance_name = imap-mcp-dovecot-{self.port}
protocols = imap
listen = 127.0.0.1
log_path = {self.log_file}
default_internal_user = {internal}
default_internal_group = {internal}
default_login_user = {login}
first_valid_uid = 1
first_valid_gid = 1
ssl = yes
ssl_cert = <{self.cert_file}
ssl_key = <{d}/tls/key.pem
{dh}
disable_plaintext_auth = no
auth_mechanisms = {mechanisms}
auth_failure_delay = 0
service anvil {{
  chroot =
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {d}/users
}}
userdb {{
  driver = passwd-file
  args = username_format=%u {d}/users
}}
{any_user}
{oauth2}
mail_location = maildir:~/Maildir:LAYOUT=fs
mail_fsync = never
protocol imap {{
  mail_max_userip_connections = 500
  {caps}
}}
namespace inbox {{
  inbox = yes
  separator = /
  prefix =
{mailboxes}
}}
{public}
# one login process and reused mail processes instead of a fork (and, for imap, an exec) per connection:
# a connection costs about 7 ms of CPU instead of 25, and every user here is the same system user
service imap-login {{
  chroot =
  service_count = 0
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {self.tls_port}
    ssl = yes
  }}
}}
service imap {{
  service_count = 100
}}
{extra}
"""

    def _oauth2_config(self, uid: int, gid: int) -> str:
        """An oauth2 passdb that asks the introspection endpoint (POST token=...) who a bearer token belongs to."""
        settings = self.dir / "oauth2.conf.ext"
        settings.write_text(
            f"introspection_mode = post\nintrospection_url = {self.oauth2_introspection_url}\n"
            "force_introspection = yes\nusername_attribute = username\nactive_attribute = active\n"
            "active_value = true\n"
        )
        passdb = f"passdb {{\n  driver = oauth2\n  mechanisms = xoauth2 oauthbearer\n  args = {settings}\n}}\n"
        if self.any_user_password:  # its static userdb already takes every user
            return passdb
        userdb_args = f"uid={uid} gid={gid} home={self.dir}/home/%u allow_all_users=yes"
        return passdb + f"userdb {{\n  driver = static\n  args = {userdb_args}\n}}\n"

    def _wait_ready(self, timeout: float) -> None:
        """Ready means a real LOGIN succeeds, not just an open port."""
        user, password = next(iter(self.users.items()))
        deadline = time.monotonic() + timeout
        while True:
            try:
                conn = imaplib.IMAP4("127.0.0.1", self.port, timeout=2)
                conn.login(user, password)
                conn.logout()
                return
            except (OSError, imaplib.IMAP4.error) as exc:
                assert self.process is not None
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = self.log_file.read_text(errors="replace")[-2000:] if self.log_file.exists() else ""
                    raise DovecotError(f"Dovecot did not start ({exc!r}). Log tail:\n{log}") from None
                time.sleep(0.02)

    def doveadm(self, *args: str) -> str:
        """Run doveadm against this instance and return its output."""
        binary = shutil.which("doveadm") or "/usr/bin/doveadm"
        done = subprocess.run([binary, "-c", str(self.conf_file), *args], capture_output=True, text=True, check=True)
        return done.stdout

    def stop(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
            self.process = None
        if getattr(self, "dir", None) and self.dir.exists():
            shutil.rmtree(self.dir, ignore_errors=True)
