"""SMTP sending against an aiosmtpd listener on loopback: each TLS mode, AUTH, and every failure's message."""

from __future__ import annotations

import datetime as dt
from email.headerregistry import Address

import pytest
from smtp_capture import CaptureSMTP, TlsOptions

from imap_mcp.server.config import SmtpSettings, load_settings
from imap_mcp.server.demo.dovecot import free_port
from imap_mcp.server.outgoing.compose import Draft, build_message, parse_recipients
from imap_mcp.server.outgoing.smtp import SendFailed, send
from imap_mcp.server.setting_values import Secret

LOGIN = ("sender@example.org", "smtp-pw-5c1e")
SECRET_SUBJECT = "Quarterly numbers, do not forward"
SECRET_BODY = "Revenue is up 4%.\n"


def _settings(smtp: CaptureSMTP, **extra: str) -> SmtpSettings:
    env = {"IMAP_HOST": "127.0.0.1", "IMAP_USERNAME": LOGIN[0], "IMAP_PASSWORD": LOGIN[1], **smtp.env(), **extra}
    settings = load_settings(env).smtp
    assert settings is not None
    return settings


def _message() -> tuple[Draft, list[str]]:
    draft = Draft(
        sender=Address("Sender", addr_spec="sender@example.org"),
        recipients=parse_recipients(["Alice <alice@example.com>"], ["bob@example.net"], ["eve@example.org"]),
        subject=SECRET_SUBJECT,
        body=SECRET_BODY,
    )
    return draft, [a.addr_spec for a in draft.recipients.everyone]


def _send(settings: SmtpSettings) -> dict[str, str]:
    draft, envelope = _message()
    return send(settings, build_message(draft, "<m1.imap-mcp@example.org>", dt.datetime.now(dt.UTC)), envelope)


@pytest.mark.parametrize(
    "options",
    [
        pytest.param({}, id="none-on-loopback"),
        pytest.param({"starttls": True, "require_starttls": True}, id="starttls"),
        pytest.param({"implicit_tls": True}, id="implicit"),
    ],
)
def test_a_message_is_delivered_with_auth_in_every_tls_mode(options: TlsOptions) -> None:
    with CaptureSMTP(auth=LOGIN, **options) as smtp:
        assert _send(_settings(smtp)) == {}
    [message], [envelope] = smtp.messages, smtp.envelopes
    assert envelope.mail_from == "sender@example.org"
    assert envelope.rcpt_tos == ("alice@example.com", "bob@example.net", "eve@example.org")
    assert envelope.authenticated
    assert envelope.tls == bool(options)
    assert message["To"] == "Alice <alice@example.com>" and message["Cc"] == "bob@example.net"
    assert "Bcc" not in message
    assert message["Message-ID"] == "<m1.imap-mcp@example.org>"
    assert message.get_content() == SECRET_BODY


def test_a_server_without_auth_is_used_without_logging_in() -> None:
    with CaptureSMTP() as smtp:
        assert _send(_settings(smtp)) == {}
    assert not smtp.envelopes[0].authenticated


def _refusal(smtp: CaptureSMTP, **extra: str) -> str:
    with pytest.raises(SendFailed) as raised:
        _send(_settings(smtp, **extra))
    text = str(raised.value)
    for secret in (LOGIN[1], "wrong-pw-77", SECRET_SUBJECT, SECRET_BODY.strip()):
        assert secret not in text
    return text


def test_a_refused_login_names_the_settings_to_check_and_not_the_password() -> None:
    with CaptureSMTP(auth=LOGIN) as smtp:
        text = _refusal(smtp, SMTP_PASSWORD="wrong-pw-77")
    assert "refused the login for 'sender@example.org'" in text and "SMTP_PASSWORD" in text
    assert smtp.messages == []


def test_starttls_that_the_server_does_not_offer_is_refused_before_anything_is_sent() -> None:
    with CaptureSMTP(auth=LOGIN) as smtp:
        text = _refusal(smtp, SMTP_TLS="starttls")
    assert "does not offer STARTTLS; nothing was sent" in text
    assert smtp.messages == []


def test_a_certificate_from_an_unknown_authority_is_refused() -> None:
    with CaptureSMTP(implicit_tls=True) as smtp:
        text = _refusal(smtp, SMTP_CA_FILE="", IMAP_CA_FILE="")
    assert "TLS with the SMTP server" in text and "SMTP_CA_FILE" in text


def test_one_refused_recipient_is_reported_and_the_others_get_the_message() -> None:
    with CaptureSMTP(reject_rcpt=("bob@example.net",)) as smtp:
        refused = _send(_settings(smtp))
    assert list(refused) == ["bob@example.net"]
    assert refused["bob@example.net"].startswith("550 5.1.1")
    assert smtp.envelopes[0].rcpt_tos == ("alice@example.com", "eve@example.org")


def test_every_recipient_refused_sends_nothing() -> None:
    with CaptureSMTP(reject_rcpt=("alice@example.com", "bob@example.net", "eve@example.org")) as smtp:
        text = _refusal(smtp)
    assert "refused every recipient" in text and "nothing was sent" in text
    assert smtp.messages == []


def test_a_refused_message_reports_the_servers_answer() -> None:
    with CaptureSMTP(fail_data_code=451) as smtp:
        text = _refusal(smtp)
    assert "did not take the message (451 Requested action aborted (test))" in text


def test_an_unreachable_server_names_host_and_port() -> None:
    port = free_port()
    settings = SmtpSettings(
        host="127.0.0.1", port=port, username="u", password=Secret(LOGIN[1]), sender="s@example.org", tls="none"
    )
    with pytest.raises(SendFailed, match=f"Cannot send through the SMTP server 127.0.0.1:{port}.*SMTP_HOST"):
        _send(settings)
