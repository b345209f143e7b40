"""`imap-mcp demo` keeps all it makes in a folder of its own (its Dovecot, its store) and removes it on exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from imap_mcp.server.config import ImapSettings
from imap_mcp.server.demo.command import demo_folder, demo_settings, demo_store_url, settings_env
from imap_mcp.server.setting_values import Secret
from imap_mcp.server.store.ledger import ledger_at


def _imap() -> ImapSettings:
    return ImapSettings(host="127.0.0.1", port=9993, username="demo", password=Secret("pw"), tls="implicit")


def test_the_demo_store_is_in_its_own_folder_and_goes_with_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))  # the user's own store would be under here
    with demo_folder() as folder:
        url = demo_store_url(folder)
        settings = demo_settings(_imap(), 2525, url)
        assert settings.webhooks.store_url == url == f"sqlite:///{folder / 'state' / 'store.sqlite3'}"
        assert settings_env(settings)["IMAP_MCP_STORE"] == url  # the stdio entry it prints uses the same store
        ledger_at(url)  # opening it creates it
        assert (folder / "state" / "store.sqlite3").is_file()
        assert (folder / "state").stat().st_mode & 0o777 == 0o700
    assert not folder.exists()
    assert list(tmp_path.iterdir()) == []


def test_the_demo_folder_is_removed_on_ctrl_c() -> None:
    with pytest.raises(KeyboardInterrupt), demo_folder() as folder:
        demo_store_url(folder)
        raise KeyboardInterrupt
    assert not folder.exists()
