"""Putting accounts to work: one server per account, picked by `--account` (stdio) or the bearer token (HTTP)."""

from __future__ import annotations

from collections.abc import Mapping

from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.types import ASGIApp

from imap_mcp.sealing import KeyRing

from ..accounts.loading import ACCOUNTS_FILE_VARIABLE, Account, Accounts
from ..accounts.pools import AccountPools, load_max_connections
from ..guard import build_guard
from ..imap.pool import ImapPool
from ..setting_values import ConfigError
from .account_routing import AccountRouter
from .app import build_server
from .built import ServedAccount, load_max_built
from .http_access import Tokens, load_http_settings, request_principal
from .reloading import AccountsFile
from .transports import guarded_app, http_app, sdk_http_app


def account_server(account: Account, pool: ImapPool | None = None, unset_ring: KeyRing | None = None) -> MCPServer:
    """The account's server; without seal keys in its settings, it seals with `unset_ring` (default: random)."""
    guard = build_guard(account.settings, principal=request_principal, unset_ring=unset_ring)
    return build_server(account.settings, pool, guard, name=account.name, policy=account.policy)


def require_tokens(accounts: Accounts) -> None:
    """`ConfigError` when no account of the file has a token: no caller could reach any over HTTP."""
    if not any(account.auth_tokens for account in accounts.accounts):
        raise ConfigError(
            f"{ACCOUNTS_FILE_VARIABLE} {accounts.source}: no account has auth_tokens, so no caller could reach "
            "one over HTTP: give each account its bearer tokens."
        )


def accounts_http_app(accounts: Accounts, env: Mapping[str, str]) -> ASGIApp:
    """The HTTP app: the environment's one account as before, or every account of the file by token (the file
    re-read on SIGHUP and whenever it changes: `routing`)."""
    http_settings = load_http_settings(env)
    if accounts.source is None:
        return http_app(account_server(accounts.accounts[0]), http_settings)
    require_tokens(accounts)
    pools = AccountPools(load_max_connections(env))
    max_built = load_max_built(env)
    #: one for the process, so that an app evicted and built again still opens what it sealed
    unset_ring = KeyRing.random()

    def build(account: Account, pool: ImapPool) -> Starlette:
        return sdk_http_app(account_server(account, pool, unset_ring), http_settings)

    def serve(account: Account) -> ServedAccount:
        return ServedAccount(account, lambda: pools.pool_for(account.settings.imap), build)

    tokens = Tokens()
    reloading = AccountsFile(env, accounts, check=require_tokens)
    router = AccountRouter(accounts, tokens, serve, reloading, max_built)
    return guarded_app(router, http_settings, tokens)
