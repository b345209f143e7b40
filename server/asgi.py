"""An ASGI application factory, for any ASGI server and for serverless platforms.

    uvicorn --factory imap_mcp.server.asgi:create_app --host 0.0.0.0 --port 8000
    hypercorn 'imap_mcp.server.asgi:create_app()'

Settings come from the environment, as for `imap-mcp serve`. Nothing runs in the background
for correctness; the ASGI server must run the app's lifespan (uvicorn, hypercorn and Mangum
with lifespan="auto" do), which starts and stops the SDK's request handling.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from starlette.types import ASGIApp

from imap_mcp.server.app import build_server
from imap_mcp.server.config import load_settings
from imap_mcp.server.http_access import load_http_settings
from imap_mcp.server.logs import setup_logging
from imap_mcp.server.startup import announce, load_or_exit
from imap_mcp.server.transports import http_app


def create_app(env: Mapping[str, str] | None = None) -> ASGIApp:
    """The app for `env` (default: the process environment); a bad setting stops with one line, as the CLI."""
    env = os.environ if env is None else env
    setup_logging()
    settings = load_or_exit(load_settings, env)
    http_settings = load_or_exit(load_http_settings, env)
    announce(settings, http=True)
    return http_app(build_server(settings), http_settings)
