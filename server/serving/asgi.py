"""An ASGI application factory, for any ASGI server and for serverless platforms.

    uvicorn --factory imap_mcp.server.serving.asgi:create_app --host 0.0.0.0 --port 8000
    hypercorn 'imap_mcp.server.serving.asgi:create_app()'

Settings come from the environment (and `IMAP_MCP_ACCOUNTS_FILE`), as for `imap-mcp serve`.
Nothing runs in the background for correctness; the ASGI server must run the app's lifespan
(uvicorn, hypercorn and Mangum with lifespan="auto" do), which starts and stops the SDK's
request handling.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping

from starlette.types import ASGIApp

from ..accounts.loading import load_accounts
from ..logs import setup_logging
from .accounts import accounts_http_app
from .startup import announce, load_or_exit


def create_app(env: Mapping[str, str] | None = None) -> ASGIApp:
    """The app for `env` (default: the process environment); a bad setting stops with one line, as the CLI."""
    env = os.environ if env is None else env
    setup_logging()
    accounts = load_or_exit(load_accounts, env)
    app = load_or_exit(functools.partial(accounts_http_app, accounts), env)
    announce(accounts, http=True)
    return app
