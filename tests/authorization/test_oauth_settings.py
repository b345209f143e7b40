"""`IMAP_MCP_OAUTH_*`: each mistake one line naming the setting; OAuth alone is enough to serve off loopback."""

from __future__ import annotations

import pytest

from imap_mcp.server.authorization.settings import ALL_SCOPES
from imap_mcp.server.serving.http_access import load_http_settings, require_authentication_off_loopback
from imap_mcp.server.setting_values import ConfigError

ISSUER = "https://login.example.com/realms/mail"
AUDIENCE = "https://mail.example.com/mcp"


def test_issuer_audience_and_scopes_are_read() -> None:
    settings = load_http_settings(
        {
            "IMAP_MCP_OAUTH_ISSUER": ISSUER,
            "IMAP_MCP_OAUTH_AUDIENCE": AUDIENCE,
            "IMAP_MCP_OAUTH_SCOPES": "mail.send,mail.read",
        }
    )
    assert settings.oauth is not None
    assert (settings.oauth.issuer, settings.oauth.audience) == (ISSUER, AUDIENCE)
    assert settings.oauth.scopes == ("mail.read", "mail.send")
    defaults = load_http_settings({"IMAP_MCP_OAUTH_ISSUER": ISSUER, "IMAP_MCP_OAUTH_AUDIENCE": AUDIENCE}).oauth
    assert defaults is not None and defaults.scopes == ALL_SCOPES
    assert load_http_settings({}).oauth is None
    require_authentication_off_loopback("0.0.0.0", settings)  # no static token needed: OAuth authenticates


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"IMAP_MCP_OAUTH_AUDIENCE": AUDIENCE}, "IMAP_MCP_OAUTH_AUDIENCE is set without IMAP_MCP_OAUTH_ISSUER"),
        ({"IMAP_MCP_OAUTH_ISSUER": ISSUER}, "IMAP_MCP_OAUTH_AUDIENCE=''"),
        (
            {"IMAP_MCP_OAUTH_ISSUER": "http://login.example.com", "IMAP_MCP_OAUTH_AUDIENCE": AUDIENCE},
            "IMAP_MCP_OAUTH_ISSUER=",
        ),
        (
            {"IMAP_MCP_OAUTH_ISSUER": ISSUER, "IMAP_MCP_OAUTH_AUDIENCE": AUDIENCE + "/"},
            "no query, fragment or trailing",
        ),
        (
            {"IMAP_MCP_OAUTH_ISSUER": ISSUER, "IMAP_MCP_OAUTH_AUDIENCE": AUDIENCE, "IMAP_MCP_OAUTH_SCOPES": "mail.all"},
            "IMAP_MCP_OAUTH_SCOPES names unknown scopes (mail.all)",
        ),
    ],
)
def test_a_mistake_is_one_line_naming_the_setting(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_http_settings(env)
    assert named in str(raised.value) and len(str(raised.value).splitlines()) == 1
