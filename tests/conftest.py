from __future__ import annotations

from collections.abc import Iterator

import pytest
from harness import Account, new_account, start_dovecot
from imap_mcp.server.dovecot import Dovecot
from imap_mcp.server.sample_mail import seed


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def dovecot() -> Iterator[Dovecot]:
    """One private Dovecot for the whole test session (public namespace Public/Team, Public/Shared)."""
    instance = start_dovecot(public_namespace=True)
    try:
        yield instance
    finally:
        instance.stop()


@pytest.fixture
def account(dovecot: Dovecot) -> Account:
    """A fresh account of this test's own, holding the sample mail."""
    acct = new_account(dovecot)
    client = acct.imap()
    try:
        seed(client)
    finally:
        client.logout()
    return acct


@pytest.fixture
def empty_account(dovecot: Dovecot) -> Account:
    """A fresh account with only the server's default mailboxes, all empty."""
    return new_account(dovecot)
