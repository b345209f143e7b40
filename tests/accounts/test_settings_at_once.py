"""Configuration errors all at once: the environment and the accounts file, each problem one line, in one run.

Issue #28: with nothing set it took three runs to learn IMAP_HOST, IMAP_PASSWORD and IMAP_USERNAME;
an accounts file took three passes; `IMAP_PASWORD is not used` said nothing of IMAP_PASSWORD.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from imap_mcp.server.accounts.loading import is_secret_file_key, load_accounts
from imap_mcp.server.accounts.pools import load_max_connections
from imap_mcp.server.config import load_settings
from imap_mcp.server.serving.built import load_max_built
from imap_mcp.server.serving.http_access import load_http_settings
from imap_mcp.server.setting_values import KNOWN_SETTINGS, ConfigError
from imap_mcp.server.tools.policy import load_policy

ROOT = Path(__file__).resolve().parents[2]
BASE = {"IMAP_HOST": "imap.example.com", "IMAP_USERNAME": "me@example.com", "IMAP_PASSWORD": "pw"}


def problems(env: Mapping[str, str]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_accounts(env)
    return str(caught.value).splitlines()


def test_with_nothing_set_one_run_names_every_missing_setting() -> None:
    lines = problems({})
    assert [line.split(" is not set", 1)[0] for line in lines] == ["IMAP_HOST", "IMAP_PASSWORD", "IMAP_USERNAME"]


def test_every_invalid_value_of_the_environment_is_one_line() -> None:
    env = {
        "IMAP_HOST": "imap.example.com",
        "IMAP_TLS": "ssl",
        "IMAP_PORT": "99999",
        "ELICITATION": "yes",
        "SMTP_HOST": "smtp.example.com",
        "SMTP_PORT": "0",
        "IMAP_MCP_READ_ONLY": "perhaps",
        "IMAP_MCP_TOOLS": "read_minds",
        "IMAP_MCP_STORE_KEYS": "short",
        "IMAP_MCP_WEBHOOK_RETENTION": "soon",
        "IMAP_MCP_SEAL_KEYS": "short",
    }
    lines = problems(env)
    named = [
        "ELICITATION='yes'",
        "IMAP_TLS='ssl'",
        "IMAP_PASSWORD is not set",
        "IMAP_PORT='99999'",
        "IMAP_USERNAME is not set",
        "SMTP_PORT='0'",
        "IMAP_MCP_SEAL_KEYS key 1 is too short",
        "IMAP_MCP_WEBHOOK_RETENTION='soon'",
        "IMAP_MCP_STORE_KEYS key 1 is too short",
        "IMAP_MCP_READ_ONLY='perhaps'",
        "IMAP_MCP_TOOLS names unknown tools (read_minds)",
    ]
    for fragment in named:
        assert sum(line.startswith(fragment) for line in lines) == 1, (fragment, lines)
    assert len(lines) == len(named), lines


def test_a_problem_of_the_login_hides_none_of_the_sending_settings() -> None:
    lines = problems({"IMAP_HOST": "imap.example.com", "SMTP_HOST": "smtp.example.com", "SMTP_FROM": "not an address"})
    assert [line.split(" ", 1)[0] for line in lines] == ["IMAP_PASSWORD", "IMAP_USERNAME", "SMTP_FROM"]


def test_a_misspelt_setting_of_the_environment_gets_a_did_you_mean() -> None:
    env = {"IMAP_HOST": "imap.example.com", "IMAP_USERNAME": "me", "IMAP_PASWORD": "pw"}
    assert problems(env) == [
        "IMAP_PASSWORD is not set: give the password of the mailbox (or set IMAP_AUTH=oauth2).",
        "IMAP_PASWORD is set, but it is not a setting: did you mean IMAP_PASSWORD?",
    ]


def test_a_misspelt_optional_setting_is_a_start_warning_and_another_programs_is_left_alone() -> None:
    accounts = load_accounts({**BASE, "IMAP_TIMOUT": "60", "IMAP_SERVER_FOR_OTHER_TOOL": "x", "SMTP_RELAY": "y"})
    assert accounts.warnings == ("IMAP_TIMOUT is set, but it is not a setting: did you mean IMAP_TIMEOUT?",)


def test_an_accounts_file_names_every_problem_in_one_pass(tmp_path: Path) -> None:
    path = tmp_path / "accounts.toml"
    path.write_text(
        '[accounts.ann]\nIMAP_USERNAME = "ann@example.com"\nIMAP_PASWORD = "pw"\nELICITATION = "maybe"\n'
        'SMTP_HOST = "smtp.example.com"\nSMTP_PORT = 0\nIMAP_MCP_STORE_KEY = "k"\n'
    )
    path.chmod(0o600)
    lines = problems({"IMAP_HOST": "imap.example.com", "IMAP_MCP_ACCOUNTS_FILE": str(path)})
    assert all(line.startswith(f"IMAP_MCP_ACCOUNTS_FILE {path}: [accounts.ann] ") for line in lines), lines
    found = [line.split("[accounts.ann] ", 1)[1] for line in lines]
    assert found == [
        "IMAP_PASWORD is not a setting: did you mean IMAP_PASSWORD?",
        "IMAP_MCP_STORE_KEY is not a setting: did you mean IMAP_MCP_STORE_KEYS?",
        "ELICITATION='maybe' is not valid: use true or false.",
        "IMAP_PASSWORD is not set: give the password of the mailbox (or set IMAP_AUTH=oauth2).",
        "SMTP_PORT='0' is not valid: use a port number from 1 to 65535.",
    ]


def test_every_configuration_error_has_the_one_exit_code() -> None:
    for env in ({}, {**BASE, "ELICITATION": "yes"}, {**BASE, "IMAP_TLS": "ssl"}):
        with pytest.raises(ConfigError) as caught:
            load_accounts(env)
        assert caught.value.exit_code == 2


class Looked(Mapping[str, str]):
    """A mapping that notes every name looked up in it, found or not."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self.found = dict(values)
        self.looked: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.looked.add(key)
        return self.found[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.found)

    def __len__(self) -> int:
        return len(self.found)


@pytest.mark.parametrize(
    "env",
    [
        {},
        {**BASE, "SMTP_HOST": "smtp.example.com", "IMAP_TLS": "starttls"},
        {
            "IMAP_USERNAME": "me@example.com",
            "IMAP_AUTH": "oauth2",
            "IMAP_OAUTH_PROVIDER": "microsoft",
            "IMAP_OAUTH_CLIENT_ID": "id",
            "IMAP_OAUTH_REFRESH_TOKEN": "rt",
            "SMTP_AUTH": "oauth2",
        },
    ],
)
def test_every_setting_the_code_looks_up_is_a_known_setting(env: dict[str, str]) -> None:
    """So that no setting misses its "did you mean", and the README's table can list them all."""
    looked = Looked(env)
    for loader in (load_settings, load_policy, load_http_settings, load_max_connections, load_max_built):
        with contextlib.suppress(ConfigError):
            loader(looked)
    ours = {key for key in looked.looked if key.startswith(("IMAP_", "SMTP_", "ELICITATION"))}
    assert ours and ours <= KNOWN_SETTINGS


def test_the_readme_lists_every_setting_and_no_other() -> None:
    readme = (ROOT / "README.md").read_text()
    first_cells = re.findall(r"^\| ([^|]*`[A-Z_]+`[^|]*) \|", readme, re.M)
    listed = {name for cell in first_cells for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cell)}
    settings = {name for name in listed if name.startswith(("IMAP_", "SMTP_", "ELICITATION"))}
    assert settings - {name for name in settings if is_secret_file_key(name)} == KNOWN_SETTINGS
