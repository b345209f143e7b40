"""Fixtures for the conformance wrapper: the pinned harness, and a real `imap-mcp serve` with spec fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from harness import new_account, spec_fixture_server
from pinned_suite import Harness, installed_harness

from imap_mcp.server.demo.dovecot import Dovecot


@pytest.fixture(scope="session")
def conformance_cli() -> Harness:
    """The pinned harness, installed with `npm ci` from the committed lock file when missing."""
    return installed_harness()


@pytest.fixture(scope="session")
def fixture_server_url(dovecot: Dovecot, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`imap-mcp serve` (default single-instance mode, spec fixtures on) for an account of its own."""
    log = tmp_path_factory.mktemp("conformance-server") / "server.log"
    with spec_fixture_server(new_account(dovecot).env(), log) as url:
        yield url
