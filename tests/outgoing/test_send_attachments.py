"""Sending, replying, saving and sending drafts with attachments from each source, end to end: SDK client → imap-mcp
→ guard → aiosmtpd listener (and the IMAP server's Drafts). The bytes that arrive are compared by SHA-256; a file
changed between question and answer is asked about again; replays deliver nothing more; paths that leave
IMAP_UPLOAD_DIR, links, and messages too large are refused before anyone is asked."""

from __future__ import annotations

import base64
import hashlib
import os
from email.message import EmailMessage
from email.parser import BytesParser
from email.policy import default as default_policy
from pathlib import Path
from typing import Any

import pytest
from harness import Account, Person, answer, append_message, ask, error_text, message_ids, served, structured
from mcp.types import InputRequiredResult
from smtp_capture import SENDER, CaptureSMTP

from imap_mcp.server.config import load_settings

pytestmark = pytest.mark.anyio

PHOTO = os.urandom(150_000)
REPORT = b"%PDF-1.4\n" + os.urandom(40_000)
NOTES = "Zürich, 9:00\n".encode()
MESSAGE: dict[str, Any] = {"to": ["alice@example.com"], "subject": "Files", "body": "Here they are.\n"}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def attached(message: EmailMessage) -> dict[str, str]:
    """Each attachment of a received message: its file name → the SHA-256 of its decoded bytes."""
    found = {}
    for part in message.iter_attachments():
        data = part.get_payload(decode=True)
        assert isinstance(data, bytes)
        found[str(part.get_filename())] = sha(data)
    return found


def inline(name: str, data: bytes, mime_type: str = "application/octet-stream") -> dict[str, str]:
    return {"name": name, "mime_type": mime_type, "content_base64": base64.b64encode(data).decode()}


def mail_with_photo(account: Account) -> str:
    """The id of a new INBOX message carrying `PHOTO` as photo.jpg."""
    message = EmailMessage()
    message["From"] = "zoe@example.com"
    message["To"] = "demo@example.org"
    message["Subject"] = "The photo"
    message.set_content("See attached.\n")
    message.add_attachment(PHOTO, maintype="image", subtype="jpeg", filename="photo.jpg")
    uid = append_message(account, message.as_bytes())
    return next(i for i in message_ids(account, "INBOX") if i.endswith(f".{uid}"))


@pytest.fixture
def uploads(tmp_path: Path) -> Path:
    folder = tmp_path / "uploads"
    (folder / "reports").mkdir(parents=True)
    (folder / "reports" / "q3.pdf").write_bytes(REPORT)
    return folder


@pytest.fixture
def env(sending_env: dict[str, str], uploads: Path) -> dict[str, str]:
    return {**sending_env, "IMAP_UPLOAD_DIR": str(uploads)}


@pytest.mark.matrix
async def test_a_message_carries_the_exact_bytes_of_each_source(
    account: Account, env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    photo = {"id": mail_with_photo(account), "part_id": "2"}
    files = [photo, {"path": "reports/q3.pdf"}, inline("notes.txt", NOTES, "text/plain")]
    async with served(load_settings(env), mode="2026-07-28", elicitation_callback=person) as client:
        result = structured(await client.call_tool("send_message", {**MESSAGE, "attachments": files}))
    assert result["status"] == "sent"
    [message] = smtp.messages
    assert attached(message) == {"photo.jpg": sha(PHOTO), "q3.pdf": sha(REPORT), "notes.txt": sha(NOTES)}
    assert message.get_body(("plain",)).get_content() == MESSAGE["body"]  # type: ignore[union-attr]
    [question] = person.shown
    total = len(PHOTO) + len(REPORT) + len(NOTES)
    assert f"Attachments: 3, {total} bytes in all:" in question
    assert f'- "photo.jpg" (image/jpeg, {len(PHOTO)} bytes) SHA-256 {sha(PHOTO)[:12]}…' in question
    assert f'- "q3.pdf" (application/pdf, {len(REPORT)} bytes)' in question
    assert f'- "notes.txt" (text/plain, {len(NOTES)} bytes)' in question


@pytest.mark.matrix
async def test_a_reply_carries_an_attachment(
    account: Account, env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    original = mail_with_photo(account)
    arguments = {"id": original, "body": "Thanks, mine too.\n", "attachments": [{"id": original, "part_id": "2"}]}
    async with served(load_settings(env), mode="2026-07-28", elicitation_callback=person) as client:
        result = structured(await client.call_tool("reply_to_message", arguments))
    assert result["status"] == "sent" and result["answered"] is True
    [message] = smtp.messages
    assert message["To"] == "zoe@example.com" and attached(message) == {"photo.jpg": sha(PHOTO)}
    assert f'"photo.jpg" (image/jpeg, {len(PHOTO)} bytes)' in person.shown[0]


def _draft(account: Account, draft_id: str) -> EmailMessage:
    client = account.imap()
    try:
        mailbox, uid = draft_id.split(".")[1], int(draft_id.rsplit(".", 1)[1])
        del mailbox
        client.select_folder(account.mailbox("Drafts"), readonly=True)
        raw = client.fetch([uid], ["BODY.PEEK[]"])[uid][b"BODY[]"]
    finally:
        client.logout()
    message = BytesParser(policy=default_policy).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    return message


@pytest.mark.matrix
async def test_a_saved_draft_carries_the_files_and_send_draft_adds_more(
    account: Account, env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    photo = {"id": mail_with_photo(account), "part_id": "2"}
    draft = {**MESSAGE, "attachments": [photo, inline("notes.txt", NOTES, "text/plain")]}
    async with served(load_settings(env), mode="2026-07-28", elicitation_callback=person) as client:
        saved = structured(await client.call_tool("save_draft", draft))
        assert attached(_draft(account, saved["id"])) == {"photo.jpg": sha(PHOTO), "notes.txt": sha(NOTES)}
        sent = structured(
            await client.call_tool("send_draft", {"id": saved["id"], "attachments": [{"path": "reports/q3.pdf"}]})
        )
    assert sent["status"] == "sent"
    [message] = smtp.messages
    assert attached(message) == {"photo.jpg": sha(PHOTO), "notes.txt": sha(NOTES), "q3.pdf": sha(REPORT)}
    [question] = person.shown
    assert "2 attachment(s) in the draft." in question
    assert f'Added by the assistant: Attachments: 1, {len(REPORT)} bytes in all:\n- "q3.pdf"' in question


async def test_a_file_changed_after_the_question_is_asked_about_again(
    env: dict[str, str], uploads: Path, smtp: CaptureSMTP
) -> None:
    arguments = {**MESSAGE, "attachments": [{"path": "reports/q3.pdf"}]}
    async with served(load_settings(env), mode="2026-07-28", elicitation_callback=Person()) as client:
        asked = await ask(client, "send_message", arguments)
        swapped = b"%PDF-1.4\n" + os.urandom(40_000)  # the same name and size, other bytes
        (uploads / "reports" / "q3.pdf").write_bytes(swapped)
        again = await answer(client, "send_message", arguments, asked.request_state)
        assert isinstance(again, InputRequiredResult) and smtp.messages == []
        sent = structured(await answer(client, "send_message", arguments, again.request_state))
    assert sent["status"] == "sent"
    [message] = smtp.messages
    assert attached(message) == {"q3.pdf": sha(swapped)}


async def test_a_replayed_approval_delivers_nothing_more(env: dict[str, str], smtp: CaptureSMTP) -> None:
    arguments = {**MESSAGE, "attachments": [{"path": "reports/q3.pdf"}, inline("notes.txt", NOTES, "text/plain")]}
    async with served(load_settings(env), mode="2026-07-28") as client:
        pending = structured(await client.call_tool("send_message", arguments))
        confirmed = {**arguments, "confirm_token": pending["confirm_token"]}
        first = structured(await client.call_tool("send_message", confirmed))
        replayed = structured(await client.call_tool("send_message", confirmed))
    assert (first["status"], replayed["status"]) == ("sent", "already_sent")
    assert len(smtp.messages) == 1 and attached(smtp.messages[0])["q3.pdf"] == sha(REPORT)


@pytest.mark.parametrize(
    ("path", "said"),
    [
        pytest.param("../secret.txt", "not a path inside IMAP_UPLOAD_DIR", id="parent"),
        pytest.param("reports/../../secret.txt", "not a path inside IMAP_UPLOAD_DIR", id="parent-inside"),
        pytest.param("/etc/hostname", "not a path inside IMAP_UPLOAD_DIR", id="absolute"),
        pytest.param("link.txt", "symbolic link", id="link-to-a-file-outside"),
        pytest.param("linked/secret.txt", "symbolic link", id="through-a-linked-folder"),
        pytest.param("hard-link.txt", "is a hard link", id="hard-link-to-a-file-outside"),
        pytest.param("reports", "not a regular file", id="a-folder"),
        pytest.param("missing.pdf", "There is no file", id="missing"),
    ],
)
async def test_a_path_that_leaves_the_upload_folder_is_refused_before_anyone_is_asked(
    path: str, said: str, env: dict[str, str], uploads: Path, smtp: CaptureSMTP, person: Person
) -> None:
    secret = uploads.parent / "secret.txt"
    secret.write_bytes(b"not for sending\n")
    (uploads / "link.txt").symlink_to(secret)
    (uploads / "linked").symlink_to(uploads.parent, target_is_directory=True)
    (uploads / "hard-link.txt").hardlink_to(secret)
    async with served(load_settings(env), mode="2026-07-28", elicitation_callback=person) as client:
        result = await client.call_tool("send_message", {**MESSAGE, "attachments": [{"path": path}]})
    assert said in error_text(result) and "Nothing was sent" in error_text(result)
    assert person.shown == [] and smtp.messages == []


async def test_without_an_upload_folder_files_from_disk_are_refused(
    sending_env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    async with served(load_settings(sending_env), mode="2026-07-28", elicitation_callback=person) as client:
        result = await client.call_tool("send_message", {**MESSAGE, "attachments": [{"path": "a.pdf"}]})
    assert "IMAP_UPLOAD_DIR" in error_text(result) and person.shown == [] and smtp.messages == []


@pytest.mark.parametrize(
    ("given", "said"),
    [
        pytest.param(
            {"name": "a.bin", "mime_type": "application/pdf", "content_base64": "not base64!"},
            "is not base64",
            id="bad-base64",
        ),
        pytest.param({"name": "a.bin", "mime_type": "pdf", "content_base64": "AAAA"}, "type/subtype", id="bad-type"),
        pytest.param(
            {"name": "a", "mime_type": "multipart/mixed", "content_base64": "AAAA"}, "type/subtype", id="structure-type"
        ),
        pytest.param({"id": "imap.nothing", "path": "a"}, "attachments", id="two-sources-in-one"),
    ],
)
async def test_a_malformed_attachment_is_refused_before_anyone_is_asked(
    given: dict[str, str], said: str, env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    async with served(load_settings(env), mode="2026-07-28", elicitation_callback=person) as client:
        result = await client.call_tool("send_message", {**MESSAGE, "attachments": [given]})
    assert result.is_error and said in str(result.content[0].text)  # type: ignore[union-attr]
    assert person.shown == [] and smtp.messages == []


async def test_a_message_over_smtp_max_message_bytes_is_refused_before_anyone_is_asked(
    env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    settings = load_settings({**env, "SMTP_MAX_MESSAGE_BYTES": "60000"})
    files = [inline("a.bin", os.urandom(30_000)), inline("b.bin", os.urandom(30_000))]
    async with served(settings, mode="2026-07-28", elicitation_callback=person) as client:
        two = await client.call_tool("send_message", {**MESSAGE, "attachments": files})
        one = await client.call_tool("send_message", {**MESSAGE, "attachments": [files[0], inline("c", b"x")]})
        encoded = await client.call_tool("send_message", {**MESSAGE, "attachments": [inline("d", os.urandom(50_000))]})
    assert "SMTP_MAX_MESSAGE_BYTES" in error_text(two)
    assert structured(one)["status"] == "sent"
    assert "would be" in error_text(encoded) and "SMTP_MAX_MESSAGE_BYTES" in error_text(encoded)
    assert len(person.shown) == 1 and len(smtp.messages) == 1


async def test_a_message_over_the_smtp_servers_size_is_refused_before_anyone_is_asked(
    account: Account, person: Person
) -> None:
    listener = CaptureSMTP(auth=(account.username, account.password))
    listener.controller.SMTP_kwargs["data_size_limit"] = 20_000
    with listener:
        settings = load_settings(account.env(**listener.env(), SMTP_FROM=SENDER))
        async with served(settings, mode="2026-07-28", elicitation_callback=person) as client:
            result = await client.call_tool(
                "send_message", {**MESSAGE, "attachments": [inline("a", os.urandom(30_000))]}
            )
    assert "SIZE" in error_text(result) and "20000" in error_text(result)
    assert person.shown == [] and listener.messages == []


async def test_the_question_warns_of_a_file_that_runs_when_opened(
    env: dict[str, str], smtp: CaptureSMTP, person: Person
) -> None:
    files = [inline("invoice.pdf.exe", b"MZ\x90\x00\x03\x00\x00\x00" + bytes(64)), inline("notes.txt", NOTES)]
    async with served(load_settings(env), mode="2026-07-28", elicitation_callback=person) as client:
        structured(await client.call_tool("send_message", {**MESSAGE, "attachments": files}))
    [question] = person.shown
    assert '"invoice.pdf.exe" (application/octet-stream, 72 bytes) SHA-256 ' in question
    assert "…; it may run when opened: rule name-ending: its name" in question
    assert "notes.txt" in question and question.count("may run when opened") == 1
