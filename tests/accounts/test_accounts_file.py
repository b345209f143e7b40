"""IMAP_MCP_ACCOUNTS_FILE: env values as defaults, *_FILE secrets, whole-file validation, the permission warning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from imap_mcp.server.accounts.loading import ENVIRONMENT_ACCOUNT, load_accounts
from imap_mcp.server.setting_values import ConfigError
from imap_mcp.server.tools.policy import ToolPolicy

TOKEN_ALICE = "alice-token-0123456789abcdef"
TOKEN_BOB = "bob-token-0123456789abcdef"
ENV = {"IMAP_HOST": "imap.example.com", "IMAP_PASSWORD": "env-password", "SMTP_HOST": "smtp.example.com"}


def write(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


COMPLETE = f"""
[accounts.alice]
auth_tokens = ["{TOKEN_ALICE}"]
IMAP_USERNAME = "alice@example.com"
IMAP_PASSWORD = "alice-password"
IMAP_MCP_READ_ONLY = true

[accounts.bob]
auth_tokens = ["{TOKEN_BOB}"]
IMAP_HOST = "imap.bob.example"
IMAP_PORT = 1993
IMAP_USERNAME = "bob@example.com"
IMAP_MCP_DISABLE_TOOLS = "send_message,reply_to_message"
ELICITATION = "false"
"""


def test_each_account_takes_the_environment_as_defaults(tmp_path: Path) -> None:
    path = write(tmp_path / "accounts.toml", COMPLETE)
    accounts = load_accounts({**ENV, "IMAP_MCP_ACCOUNTS_FILE": str(path)})
    alice, bob = accounts.accounts
    assert accounts.names() == ["alice", "bob"] and accounts.warnings == ()
    assert (alice.settings.imap.host, alice.settings.imap.password.reveal()) == ("imap.example.com", "alice-password")
    assert alice.policy == ToolPolicy(read_only=True)
    assert alice.settings.smtp is not None and alice.settings.smtp.sender == "alice@example.com"
    assert (bob.settings.imap.host, bob.settings.imap.port) == ("imap.bob.example", 1993)
    assert bob.settings.imap.password.reveal() == "env-password"
    assert bob.policy.disabled == {"send_message", "reply_to_message"} and not bob.settings.elicitation
    assert [t.reveal() for t in alice.auth_tokens] == [TOKEN_ALICE]
    assert TOKEN_ALICE not in repr(accounts) and "alice-password" not in repr(accounts)


def test_secrets_come_from_files_in_the_table_and_in_the_environment(tmp_path: Path) -> None:
    secret = write(tmp_path / "alice.pw", "from-a-file\n")
    tokens = write(tmp_path / "alice.tokens", f"{TOKEN_ALICE}\n")
    env_secret = write(tmp_path / "env.pw", "env-from-file")
    path = write(
        tmp_path / "accounts.toml",
        f'[accounts.alice]\nauth_tokens_file = "{tokens}"\nIMAP_USERNAME = "a"\nIMAP_PASSWORD_FILE = "{secret}"\n'
        '[accounts.bob]\nIMAP_USERNAME = "b"\n',
    )
    env = {"IMAP_HOST": "imap.example.com", "IMAP_PASSWORD_FILE": str(env_secret), "IMAP_MCP_ACCOUNTS_FILE": str(path)}
    env["OTHER_TOOL_TOKEN_FILE"] = "/nonexistent"  # another program's setting: not ours to read
    alice, bob = load_accounts(env).accounts
    assert alice.settings.imap.password.reveal() == "from-a-file"
    assert [t.reveal() for t in alice.auth_tokens] == [TOKEN_ALICE]
    assert bob.settings.imap.password.reveal() == "env-from-file"
    single = load_accounts({"IMAP_HOST": "h", "IMAP_USERNAME": "u", "IMAP_PASSWORD_FILE": str(env_secret)})
    assert single.accounts[0].name == ENVIRONMENT_ACCOUNT
    assert single.accounts[0].settings.imap.password.reveal() == "env-from-file"


def test_the_whole_file_is_checked_one_line_per_problem(tmp_path: Path) -> None:
    path = write(
        tmp_path / "accounts.toml",
        f"""
[accounts.alice]
auth_tokens = ["{TOKEN_ALICE}", "short"]
IMAP_USERNAME = "alice"
IMAP_PORT = "not-a-port"
IMAP_MCP_SEAL_KEYS = "x"
FAVOURITE_COLOUR = "blue"

[accounts.bob]
auth_tokens = ["{TOKEN_ALICE}"]
IMAP_USERNAME = "bob"
IMAP_PASSWORD = "p"
IMAP_PASSWORD_FILE = "/nonexistent"

[accounts.carol]
IMAP_USERNAME = "carol"
IMAP_MCP_TOOLS = "list_mailboxes,read_minds"

[accounts.dave]
IMAP_USERNAME = "dave"
SMTP_PORT = 587
""",
    )
    env = {"IMAP_HOST": "imap.example.com", "IMAP_PASSWORD": "pw", "IMAP_MCP_ACCOUNTS_FILE": str(path)}
    with pytest.raises(ConfigError) as caught:
        load_accounts(env)
    lines = str(caught.value).splitlines()
    assert all(line.startswith(f"IMAP_MCP_ACCOUNTS_FILE {path}: [accounts.") for line in lines), lines
    expected = [
        "[accounts.alice] auth_tokens token 2 is too short",
        "[accounts.alice] IMAP_MCP_SEAL_KEYS is a setting of the whole server",
        "[accounts.alice] FAVOURITE_COLOUR is not a setting",
        "[accounts.alice] IMAP_PORT='not-a-port' is not valid",
        "[accounts.bob] IMAP_PASSWORD and IMAP_PASSWORD_FILE are both set",
        "[accounts.carol] IMAP_MCP_TOOLS names unknown tools (read_minds)",
        "[accounts.dave] SMTP_PORT is not used",
    ]
    for fragment in expected:
        assert sum(fragment in line for line in lines) == 1, (fragment, lines)
    assert len(lines) == len(expected)


def test_every_invalid_value_of_an_account_is_one_line(tmp_path: Path) -> None:
    path = write(
        tmp_path / "accounts.toml",
        """
[accounts.erin]
IMAP_USERNAME = "erin@example.com"
ELICITATION = "maybe"
IMAP_TLS = "sometimes"
IMAP_TIMEOUT = -1
IMAP_PORT = "x"
SMTP_HOST = "smtp.example.com"
SMTP_PORT = 0
IMAP_MCP_READ_ONLY = "perhaps"
IMAP_MCP_TOOLS = "read_minds"
IMAP_MCP_DISABLE_TOOLS = "fly"
""",
    )
    with pytest.raises(ConfigError) as caught:
        load_accounts({**ENV, "IMAP_MCP_ACCOUNTS_FILE": str(path)})
    lines = str(caught.value).splitlines()
    expected = [
        "ELICITATION='maybe' is not valid",
        "IMAP_TLS='sometimes' is not valid",
        "IMAP_TIMEOUT='-1' is not valid",
        "IMAP_PORT='x' is not valid",
        "SMTP_PORT='0' is not valid",
        "IMAP_MCP_READ_ONLY='perhaps' is not valid",
        "IMAP_MCP_TOOLS names unknown tools (read_minds)",
        "IMAP_MCP_DISABLE_TOOLS names unknown tools (fly)",
    ]
    for fragment in expected:
        assert sum(f"[accounts.erin] {fragment}" in line for line in lines) == 1, (fragment, lines)
    assert len(lines) == len(expected), lines


def test_a_missing_setting_is_reported_with_the_values_around_it(tmp_path: Path) -> None:
    """IMAP_PORT is read before IMAP_USERNAME, the policy after the settings: every problem is reported in order."""
    path = write(tmp_path / "accounts.toml", '[accounts.frank]\nIMAP_PORT = "x"\nIMAP_MCP_READ_ONLY = "no"\n')
    with pytest.raises(ConfigError) as caught:
        load_accounts({**ENV, "IMAP_MCP_ACCOUNTS_FILE": str(path)})
    lines = [line.split("[accounts.frank] ", 1)[1] for line in str(caught.value).splitlines()]
    assert [line.split(" is not ", 1)[0] for line in lines] == [
        "IMAP_PORT='x'",
        "IMAP_USERNAME",
        "IMAP_MCP_READ_ONLY='no'",
    ], lines


def oauth_token_file(tmp_path: Path) -> Path:
    return write(tmp_path / "token.json", '{"refresh_token": "refresh-0123456789"}')


def test_an_account_signs_in_with_oauth(tmp_path: Path) -> None:
    client_secret = write(tmp_path / "client.secret", "client-secret-from-file\n")
    path = write(
        tmp_path / "accounts.toml",
        f"""
[accounts.grace]
IMAP_USERNAME = "grace@example.com"
IMAP_AUTH = "oauth2"
IMAP_OAUTH_PROVIDER = "google"
IMAP_OAUTH_CLIENT_ID = "client-id"
IMAP_OAUTH_CLIENT_SECRET_FILE = "{client_secret}"
IMAP_OAUTH_TOKEN_FILE = "{oauth_token_file(tmp_path)}"
""",
    )
    (grace,) = load_accounts({"IMAP_MCP_ACCOUNTS_FILE": str(path)}).accounts
    imap, smtp = grace.settings.imap, grace.settings.smtp
    assert (imap.auth, imap.host) == ("oauth2", "imap.gmail.com")  # the provider's host, as in the environment
    assert imap.oauth is not None and imap.oauth.token_file == tmp_path / "token.json"
    assert imap.oauth.client_secret is not None and imap.oauth.client_secret.reveal() == "client-secret-from-file"
    assert smtp is not None and (smtp.host, smtp.auth) == ("smtp.gmail.com", "oauth2")


def test_a_misspelt_oauth_setting_is_reported_with_a_provider(tmp_path: Path) -> None:
    """A name that is no setting's says which it is close to; the provider fills in the hosts without copying the
    settings, so a key nobody reads (no password with OAuth) stays unread."""
    path = write(
        tmp_path / "accounts.toml",
        f"""
[accounts.grace]
IMAP_USERNAME = "grace@example.com"
IMAP_AUTH = "oauth2"
IMAP_OAUTH_PROVIDER = "microsoft"
IMAP_OAUTH_CLIENT_ID = "client-id"
IMAP_OAUTH_TOKEN_FILE = "{oauth_token_file(tmp_path)}"
IMAP_OAUTH_SCOPES = "mail"
IMAP_PASSWORD = "not-with-oauth"
""",
    )
    with pytest.raises(ConfigError) as caught:
        load_accounts({"IMAP_MCP_ACCOUNTS_FILE": str(path)})
    assert str(caught.value).splitlines() == [
        f"IMAP_MCP_ACCOUNTS_FILE {path}: [accounts.grace] IMAP_OAUTH_SCOPES is not a setting: did you mean "
        "IMAP_OAUTH_SCOPE?",
        f"IMAP_MCP_ACCOUNTS_FILE {path}: [accounts.grace] IMAP_PASSWORD is not used: it is not needed with these "
        "settings (e.g. SMTP_PORT without SMTP_HOST).",
    ]


def test_the_oauth_token_file_of_the_environment_is_a_path_not_a_secret(tmp_path: Path) -> None:
    env = {
        "IMAP_USERNAME": "grace@example.com",
        "IMAP_AUTH": "oauth2",
        "IMAP_OAUTH_PROVIDER": "google",
        "IMAP_OAUTH_CLIENT_ID": "client-id",
        "IMAP_OAUTH_TOKEN_FILE": str(oauth_token_file(tmp_path)),
    }
    (account,) = load_accounts(env).accounts
    assert account.settings.imap.oauth is not None
    assert account.settings.imap.oauth.token_file == tmp_path / "token.json"


def test_a_token_of_two_accounts_is_refused(tmp_path: Path) -> None:
    path = write(
        tmp_path / "accounts.toml",
        f'[accounts.a]\nauth_tokens = ["{TOKEN_ALICE}"]\nIMAP_USERNAME = "a@example.com"\n'
        f'[accounts.b]\nauth_tokens = ["{TOKEN_ALICE}"]\nIMAP_USERNAME = "b@example.com"\n',
    )
    with pytest.raises(ConfigError, match=r"\[accounts.b\] an auth token is also one of \[accounts.a\]"):
        load_accounts({**ENV, "IMAP_MCP_ACCOUNTS_FILE": str(path)})


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[accounts]\n", "must hold only \\[accounts.NAME\\] tables"),
        ('[other]\nx = "1"\n', "found other"),
        ("[accounts.a\n", "is not valid TOML"),
        ('[accounts."bad name"]\nIMAP_USERNAME = "a"\n', "the name is not valid"),
    ],
)
def test_a_malformed_file_is_refused(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path / "accounts.toml", text)
    with pytest.raises(ConfigError, match=message):
        load_accounts({**ENV, "IMAP_MCP_ACCOUNTS_FILE": str(path)})


def test_bearer_tokens_of_the_environment_do_not_mix_with_a_file(tmp_path: Path) -> None:
    path = write(tmp_path / "accounts.toml", COMPLETE)
    env = {**ENV, "IMAP_MCP_ACCOUNTS_FILE": str(path), "IMAP_MCP_AUTH_TOKENS": TOKEN_ALICE}
    with pytest.raises(ConfigError, match="put each caller's token in its account's auth_tokens"):
        load_accounts(env)


def test_a_file_readable_by_others_gets_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path / "accounts.toml", COMPLETE, mode=0o644)
    (warning,) = load_accounts({**ENV, "IMAP_MCP_ACCOUNTS_FILE": str(path)}).warnings
    assert f"IMAP_MCP_ACCOUNTS_FILE {path} can be read by other users" in warning and "chmod 600" in warning


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("IMAP_", "SMTP_"))}
    command = [sys.executable, "-m", "imap_mcp.server", *args]
    return subprocess.run(
        command, env={**base, **env}, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


@pytest.mark.slow
def test_the_cli_prints_every_problem_and_exits_2(tmp_path: Path) -> None:
    path = write(tmp_path / "accounts.toml", '[accounts.a]\nIMAP_PORT = "x"\n[accounts.b]\nNOPE = "1"\n')
    done = run_cli({**ENV, "IMAP_MCP_ACCOUNTS_FILE": str(path)}, "serve")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert all(line.startswith(f"imap-mcp: IMAP_MCP_ACCOUNTS_FILE {path}: [accounts.") for line in lines), lines
    assert "[accounts.a] IMAP_PORT='x' is not valid" in lines[0]
    assert "[accounts.a] IMAP_USERNAME is not set" in lines[1]
    assert "[accounts.b] NOPE is not a setting" in lines[2]
    assert "[accounts.b] IMAP_USERNAME is not set" in lines[3]
    assert len(lines) == 4


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("stdio",), "holds several accounts: name one with --account (alice, bob)"),
        (("stdio", "--account", "carol"), "--account 'carol' is not in"),
        (("serve", "--port", "1"), None),
    ],
)
def test_choosing_the_account(tmp_path: Path, args: tuple[str, ...], message: str | None) -> None:
    without_tokens = "\n".join(line for line in COMPLETE.splitlines() if not line.startswith("auth_tokens"))
    path = write(tmp_path / "accounts.toml", without_tokens)
    done = run_cli({**ENV, "IMAP_MCP_ACCOUNTS_FILE": str(path)}, *args)
    assert done.returncode == 2
    assert (message or "no account has auth_tokens") in done.stderr


@pytest.mark.slow
def test_account_needs_an_accounts_file() -> None:
    done = run_cli({**ENV, "IMAP_USERNAME": "u@example.com"}, "stdio", "--account", "alice")
    assert done.returncode == 2 and "--account 'alice' needs IMAP_MCP_ACCOUNTS_FILE" in done.stderr
