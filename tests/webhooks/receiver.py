"""A webhook receiver on loopback that verifies each delivery the Standard Webhooks way, as a real one would."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: how far a webhook-timestamp may be from now (the scheme's usual five minutes)
TOLERANCE = 300


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """True when one of the `v1,` signatures is the HMAC-SHA256 of "id.timestamp.body" under the secret."""
    webhook_id, timestamp = headers.get("webhook-id", ""), headers.get("webhook-timestamp", "")
    if not webhook_id or not timestamp.isdigit() or abs(time.time() - int(timestamp)) > TOLERANCE:
        return False
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = hmac.new(key, f"{webhook_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    for candidate in headers.get("webhook-signature", "").split():
        version, _, signature = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(base64.b64decode(signature), expected):
            return True
    return False


@dataclass(frozen=True)
class Delivery:
    webhook_id: str
    event: dict[str, Any]
    headers: dict[str, str]
    path: str
    received_at: float = field(default_factory=time.time)


class Receiver:
    """Accepts verified deliveries (204), refuses the rest (401); `hold()` keeps the next request waiting."""

    def __init__(self, secret: str, port: int = 0) -> None:
        self.secret = secret
        #: the secret of each path, for several webhooks (one per account) posting to one receiver
        self.secrets: dict[str, str] = {}
        self.accepted: list[Delivery] = []
        self.refused = 0
        self.holding = threading.Event()
        self.held = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def url(self, path: str = "/hooks/new-mail") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def hold(self) -> None:
        """The next delivery is received, then left without an answer until `release` is set."""
        self.holding.set()

    def ids(self) -> list[str]:
        with self.lock:
            return [d.webhook_id for d in self.accepted]

    def wait_for(self, count: int, timeout: float = 60.0) -> list[Delivery]:
        """The accepted deliveries once there are at least `count` (generous wait)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if len(self.accepted) >= count:
                    return list(self.accepted)
            time.sleep(0.1)
        raise AssertionError(f"{len(self.accepted)} of {count} deliveries arrived within {timeout} s")

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                if receiver.holding.is_set():
                    receiver.holding.clear()
                    receiver.held.set()
                    receiver.release.wait()
                    return  # the sender is gone by now: no answer
                if not verify(receiver.secrets.get(self.path, receiver.secret), headers, body):
                    with receiver.lock:
                        receiver.refused += 1
                    self.send_response(401)
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.accepted.append(Delivery(headers["webhook-id"], json.loads(body), headers, self.path))
                self.send_response(204)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler
