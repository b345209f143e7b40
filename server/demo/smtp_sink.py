"""The demo's SMTP server: on loopback only, it delivers every message it takes into the demo INBOX.

So a person trying `send_message` in the demo sees the message arrive (and imap-mcp's copy in
Sent), and nothing ever leaves the machine. Plain SMTP without AUTH: it listens on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, Envelope, Session

from .dovecot import free_port

HOST = "127.0.0.1"


class _Deliver:
    def __init__(self, deliver: Callable[[bytes], None]) -> None:
        self.deliver = deliver

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        raw = envelope.original_content or envelope.content
        if not isinstance(raw, bytes):
            return "554 5.6.0 Message not readable"
        await asyncio.to_thread(self.deliver, raw)
        return "250 2.0.0 Delivered to the demo mailbox"


class SmtpSink:
    """`with SmtpSink(deliver) as sink:` listens on 127.0.0.1:`sink.port`; `deliver(raw)` files each message."""

    def __init__(self, deliver: Callable[[bytes], None]) -> None:
        self.port = free_port()
        self.controller = Controller(_Deliver(deliver), hostname=HOST, port=self.port, decode_data=False)

    def __enter__(self) -> SmtpSink:
        self.controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.controller.stop()
