"""Putting accounts to work: one server per account, picked by `--account` (stdio) or the bearer token (HTTP)."""

from __future__ import annotations

from collections.abc import Mapping

from mcp.server.mcpserver import MCPServer
from starlette.applications import Starlette
from starlette.types import ASGIApp

from imap_mcp.sealing import KeyRing

from ..accounts.loading import ACCOUNTS_FILE_VARIABLE, Account, Accounts
from ..accounts.pools import AccountPools, load_max_connections
from ..authorization.settings import ResourceServerSettings
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
    """`ConfigError` when no account of the file has a token or an OAuth subject: no caller could reach any."""
    if not any(account.auth_tokens or account.oauth_subjects for account in accounts.accounts):
        raise ConfigError(
            f"{ACCOUNTS_FILE_VARIABLE} {accounts.source}: no account has auth_tokens or oauth_subjects, so no caller "
            "could reach one over HTTP: give each account its bearer tokens (or, with IMAP_MCP_OAUTH_ISSUER, the "
            "OAuth subjects of its person)."
        )


def require_issuer_for_subjects(accounts: Accounts, oauth: ResourceServerSettings | None) -> None:
    """`ConfigError` when an account lists OAuth subjects but no issuer is set: they could never sign in."""
    named = [account.name for account in accounts.accounts if account.oauth_subjects]
    if named and oauth is None:
        raise ConfigError(
            f"{ACCOUNTS_FILE_VARIABLE} {accounts.source}: {', '.join(named)} list oauth_subjects, but "
            "IMAP_MCP_OAUTH_ISSUER is not set: set it (and IMAP_MCP_OAUTH_AUDIENCE), or remove oauth_subjects."
        )


def accounts_http_app(accounts: Accounts, env: Mapping[str, str]) -> ASGIApp:
    """The HTTP app: the environment's one account as before, or every account of the file by token (the file
    re-read on SIGHUP and whenever it changes: `routing`)."""
    http_settings = load_http_settings(env)
    if accounts.source is None:
        return http_app(account_server(accounts.accounts[0]), http_settings)
    require_tokens(accounts)
    require_issuer_for_subjects(accounts, http_settings.oauth)
    pools = AccountPools(load_max_connections(env))
    max_built = load_max_built(env)
    #: one for the process, so that an app evicted and built again still opens what it sealed
    unset_ring = KeyRing.random()

    def build(account: Account, pool: ImapPool) -> Starlette:
        return sdk_http_app(account_server(account, pool, unset_ring), http_settings)

    def serve(account: Account) -> ServedAccount:
        return ServedAccount(account, lambda: pools.pool_for(account.settings.imap), build)

    tokens = Tokens()
    claim = http_settings.oauth.subject_claim if http_settings.oauth else "sub"
    reloading = AccountsFile(env, accounts, check=require_tokens)
    router = AccountRouter(accounts, tokens, serve, reloading, max_built=max_built, subject_claim=claim)
    return guarded_app(router, http_settings, tokens)
