"""Where a webhook may point: https anywhere, plain http:// only to a loopback host; `webhook set` says why not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from harness import Account
from watching import Operator, operating

from imap_mcp.server.webhooks.rows import invalid_url_reason


@pytest.fixture
def operator(empty_account: Account, tmp_path: Path) -> Iterator[Operator]:
    with operating(empty_account, f"sqlite:///{tmp_path / 'store.sqlite3'}", tmp_path) as running:
        yield running


@pytest.mark.parametrize(
    "url",
    ["http://hooks.example.com/x", "http://10.0.0.5/x", "http://localhost.example.com/x", "HTTP://[2001:db8::1]/"],
)
def test_plain_http_off_loopback_is_not_a_valid_url(url: str) -> None:
    assert invalid_url_reason(url) == "plain http:// is accepted only for a loopback host (such as 127.0.0.1)"


@pytest.mark.slow
def test_webhook_set_refuses_plain_http_off_loopback_and_takes_it_on_loopback(operator: Operator) -> None:
    refused = operator.run("webhook", "set", "--url", "http://hooks.example.com/new-mail")
    assert refused.returncode == 2
    assert "--url is not valid: plain http:// is accepted only for a loopback host" in refused.stderr
    assert "https://" in refused.stderr
    assert operator.status().state == "not_configured"
    for url in ("http://127.0.0.1:8080/x", "http://localhost/x", "http://[::1]:9/x", "https://hooks.example.com/x"):
        assert operator.set_webhook(url).startswith("whsec_"), url
    assert operator.status().state == "no_watcher"
