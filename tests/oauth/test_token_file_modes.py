"""The token file and the folders `imap-mcp auth` creates for it are private whatever the umask.

Each write runs in a fresh Python process with `os.umask(0)`: the umask is per process, and this
one's must not change under the tests running beside it.
"""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

WRITE_UNDER_UMASK_0 = """
import os, sys
from pathlib import Path
from imap_mcp.server.oauth.token_file import write_fields
os.umask(0)
write_fields(Path(sys.argv[1]), {"refresh_token": "r"})
"""


def write_under_umask_0(path: Path) -> None:
    subprocess.run([sys.executable, "-c", WRITE_UNDER_UMASK_0, str(path)], check=True)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_folder_created_for_the_token_file_is_0700_the_file_0600_and_existing_folders_keep_theirs(
    tmp_path: Path,
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    path = shared / "state" / "imap-mcp" / "oauth-token.json"
    for _ in range(2):  # the first write creates the folders; the second replaces the file, as on rotation
        write_under_umask_0(path)
        modes = {folder.name: mode(folder) for folder in (shared, shared / "state", path.parent)}
        assert modes == {"shared": 0o755, "state": 0o700, "imap-mcp": 0o700}
        assert mode(path) == 0o600
        assert [entry.name for entry in path.parent.iterdir()] == ["oauth-token.json"]  # no temporary file left
