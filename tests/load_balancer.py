"""nginx (Debian package) as a round-robin load balancer on loopback, started per test."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from imap_mcp.server.demo.dovecot import free_port

NGINX_CONF = """worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  log_format upstream '$upstream_addr $status';
  access_log {dir}/access.log upstream;
  client_body_temp_path {dir}/tmp/body;
  proxy_temp_path {dir}/tmp/proxy;
  fastcgi_temp_path {dir}/tmp/fastcgi;
  uwsgi_temp_path {dir}/tmp/uwsgi;
  scgi_temp_path {dir}/tmp/scgi;
  upstream imap_mcp {{
{servers}
    keepalive 16;
  }}
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass http://imap_mcp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_read_timeout 300s;
      proxy_next_upstream {next_upstream};
    }}
  }}
}}
"""


def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if not found:
        raise RuntimeError("nginx is not installed: run scripts/dev setup (apt-get install nginx)")
    return found


@contextlib.contextmanager
def round_robin(backend_ports: list[int], failover: bool = False) -> Iterator[tuple[int, Path]]:
    """nginx balancing each request over `backend_ports` in turn; yields (port, access log).

    With `failover` (a benchmark that kills a replica), a request that cannot reach its replica goes to the next,
    and a replica that failed is left out for a while, as a production balancer does."""
    work = Path(tempfile.mkdtemp(prefix="lb."))
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (work / "tmp" / sub).mkdir(parents=True)
    port = free_port()
    # no max_fails: a request must never be silently re-routed, so the tests see where each went
    fails = "max_fails=1 fail_timeout=30s" if failover else "max_fails=0"
    servers = "\n".join(f"    server 127.0.0.1:{p} {fails};" for p in backend_ports)
    conf = work / "nginx.conf"
    next_upstream = "error timeout" if failover else "off"
    conf.write_text(NGINX_CONF.format(dir=work, servers=servers, port=port, next_upstream=next_upstream))
    binary = nginx_binary()
    subprocess.run([binary, "-t", "-q", "-p", str(work), "-c", str(conf), "-e", str(work / "error.log")], check=True)
    process = subprocess.Popen(
        [binary, "-p", str(work), "-c", str(conf), "-e", str(work / "error.log"), "-g", "daemon off;"],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while not (work / "nginx.pid").exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("nginx did not start: " + (work / "error.log").read_text(errors="replace"))
            time.sleep(0.02)
        yield port, work / "access.log"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=10)
        shutil.rmtree(work, ignore_errors=True)
