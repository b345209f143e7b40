"""The token file: JSON with at least `refresh_token`, mode 0600, always replaced atomically."""

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
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
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


def store_refresh_token(path: Path, refresh_token: str) -> None:
    """Keep the other fields, replace the refresh token."""
    fields = read_fields(path)
    fields["refresh_token"] = refresh_token
    write_fields(path, fields)
