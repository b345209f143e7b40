"""Where the tests install the pinned tools they run (ContextForge, the conformance suite, the Inspector, mcp-hub).

Once per machine, not per checkout: each install lives in a folder named for a digest of the files that pin it
(a lock file, a requirements list), under `$IMAP_MCP_TEST_CACHE`, default `~/.cache/imap-mcp-tests`. A clean
clone with the same pins reuses it; a changed pin installs beside it. An install counts only once its `done`
stamp is written, so one cut off half-way is made again.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

CACHE = Path(
    os.environ.get("IMAP_MCP_TEST_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "imap-mcp-tests"
)


def pinned_dir(kind: str, *pins: Path) -> Path:
    """The folder of the install of `kind` that `pins` (their bytes) describe."""
    digest = hashlib.sha256()
    for pin in pins:
        digest.update(pin.read_bytes())
    return CACHE / f"{kind}-{digest.hexdigest()[:16]}"


def is_done(folder: Path) -> bool:
    """Whether the install in `folder` ran to its end."""
    return (folder / "done").exists()


def mark_done(folder: Path) -> None:
    (folder / "done").touch()
