"""TLS client contexts for the IMAP and SMTP connections: verified, TLS 1.2 or newer.

At server/'s top level, not in a feature's folder: IMAP and SMTP both connect with it.
"""

from __future__ import annotations

import ssl
from functools import cache
from pathlib import Path


@cache
def _context(ca_file: str | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_file)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


def tls_context(ca_file: Path | None) -> ssl.SSLContext:
    """A context trusting `ca_file` (a PEM file) when given, else the system's trust store; one per file."""
    return _context(str(ca_file) if ca_file else None)
