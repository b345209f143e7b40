"""Putting accounts to work: one server per account, picked by `--account` (stdio) or the bearer token (HTTP)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp

from ..app import build_server
from ..config import ConfigError
from ..http_access import load_http_settings, principal_for_token
from ..transports import guarded_app, http_app, sdk_http_app
from .loading import ACCOUNTS_FILE_VARIABLE, Account, Accounts
from .pools import AccountPools, load_max_connections
from .routing import AccountRouter


def account_server(account: Account, pools: AccountPools | None = None) -> MCPServer:
    pool = pools.pool_for(account.settings.imap) if pools else None
    return build_server(account.settings, pool, name=account.name, policy=account.policy)


def stdio_account(accounts: Accounts, name: str | None) -> Account:
    """The account `--account NAME` names; without it, the only one there is."""
    if name is not None and accounts.source is None:
        raise ConfigError(f"--account {name!r} needs {ACCOUNTS_FILE_VARIABLE}: set it to the accounts file.")
    if name is not None:
        return accounts.named(name)
    if len(accounts.accounts) > 1:
        raise ConfigError(
            f"{accounts.source} holds several accounts: name one with --account ({', '.join(accounts.names())})."
        )
    return accounts.accounts[0]


def accounts_http_app(accounts: Accounts, env: Mapping[str, str]) -> ASGIApp:
    """The HTTP app: the environment's one account as before, or every account of the file by token."""
    http_settings = load_http_settings(env)
    if accounts.source is None:
        return http_app(account_server(accounts.accounts[0]), http_settings)
    tokens = tuple(t for a in accounts.accounts for t in a.auth_tokens)
    if not tokens:
        raise ConfigError(
            f"{ACCOUNTS_FILE_VARIABLE} {accounts.source}: no account has auth_tokens, so no caller could reach "
            "one over HTTP: give each account its bearer tokens."
        )
    pools = AccountPools(load_max_connections(env))
    apps_by_principal = {}
    for account in accounts.accounts:
        app = sdk_http_app(account_server(account, pools), http_settings)
        apps_by_principal.update({principal_for_token(t.reveal()): app for t in account.auth_tokens})
    return guarded_app(AccountRouter(apps_by_principal), dataclasses.replace(http_settings, auth_tokens=tokens))
