"""The token file: JSON with at least `refresh_token`, mode 0600 in folders it creates 0700, always replaced
atomically."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any


def read_fields(path: Path) -> dict[str, Any]:
    """Everything in the token file (empty when it is missing or not a JSON object)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_fields(path: Path, fields: dict[str, Any]) -> None:
    """Replace the file with `fields` in one rename: readers see the old file or the new one, never half."""
    _make_private_folders(path.parent)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o600)
            json.dump(fields, handle, indent=2)
            handle.write("\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _make_private_folders(folder: Path) -> None:
    """Create `folder` and its missing parents, each 0700 whatever the umask: `mkdir`'s mode is masked by the
    umask, and `parents=True` does not apply it to the parents at all, so each folder made here is chmod-ed.
    Folders that already existed, or that another process made meanwhile, keep their mode."""
    missing: list[Path] = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for created in reversed(missing):
        try:
            created.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(created, 0o700)


def store_refresh_token(path: Path, refresh_token: str) -> None:
    """Keep the other fields, replace the refresh token."""
    fields = read_fields(path)
    fields["refresh_token"] = refresh_token
    write_fields(path, fields)
