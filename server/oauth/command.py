"""`imap-mcp auth google|microsoft|TOKEN_URL [--flow device|browser] [--token-file PATH]`."""

from __future__ import annotations

import os
import sys
from typing import Literal

from ..serving.startup import load_or_exit
from .errors import OAuthError
from .signin import plan, run


def run_auth(provider_or_url: str, flow: Literal["device", "browser"] | None, token_file: str | None) -> None:
    """Sign in; a bad setting exits 2 and a sign-in that did not finish exits 1, each with one line."""
    sign_in = load_or_exit(lambda env: plan(env, provider_or_url, flow, token_file), os.environ)
    try:
        run(sign_in)
    except OAuthError as exc:
        print(f"imap-mcp: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    except KeyboardInterrupt:
        print("imap-mcp: sign-in cancelled; nothing was saved.", file=sys.stderr)
        raise SystemExit(1) from None
