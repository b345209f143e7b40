"""The settings a pool connects with: IMAP_PORT defaults to 993 with implicit TLS, 143 otherwise."""

from __future__ import annotations

import pytest

from imap_mcp.server.config import load_settings

BASE = {"IMAP_USERNAME": "me@example.com", "IMAP_PASSWORD": "pw"}


@pytest.mark.parametrize(
    ("change", "port"),
    [
        pytest.param({"IMAP_HOST": "imap.example.com"}, 993, id="implicit-by-default"),
        pytest.param({"IMAP_HOST": "imap.example.com", "IMAP_TLS": "implicit"}, 993, id="implicit"),
        pytest.param({"IMAP_HOST": "imap.example.com", "IMAP_TLS": "starttls"}, 143, id="starttls"),
        pytest.param({"IMAP_HOST": "127.0.0.1", "IMAP_TLS": "none"}, 143, id="none-on-loopback"),
        pytest.param({"IMAP_HOST": "imap.example.com", "IMAP_PORT": "1993"}, 1993, id="given-port-wins"),
    ],
)
def test_the_default_port_follows_the_tls_mode(change: dict[str, str], port: int) -> None:
    assert load_settings({**BASE, **change}).imap.port == port
