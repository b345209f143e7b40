"""get_message shows a calendar invitation as its event and a mailing list's unsubscribe addresses (issue 41).

Messages are appended to the real server and read with get_message: a REQUEST with attendees, a CANCEL, an
all-day and a recurring event, an .ics attachment, and the bounds (events, attendees, size); a calendar that is
not iCalendar, or a field that cannot be read, is left out with a note and the message still reads. The
List-Unsubscribe addresses are shown (bounded) with RFC 8058 one-click, and never visited: a listener named in
them hears nothing. Hostile text in an invitation is in `tests/hostile/` and `test_sender_fields.py`.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from harness import Account, append_message, served, structured
from hostile.invitation_mail import ATTENDEES, ORGANIZER, calendar, event, invitation_mail, meeting
from hostile.untrusted_mail import check_fenced

from imap_mcp.server.reading.invitations import CALENDAR_BYTES, MAX_ATTENDEES, MAX_EVENTS, CalendarSource, invitation
from imap_mcp.server.reading.parts import Part
from imap_mcp.server.reading.unsubscribe import MAX_URI_CHARS, MAX_URIS, list_unsubscribe

pytestmark = pytest.mark.anyio

ONE_CLICK = "List-Unsubscribe-Post: List-Unsubscribe=One-Click"


async def read_only_message(account: Account, raw: bytes) -> dict[str, Any]:
    """`raw` appended to the account's INBOX and read with get_message (its fence checked)."""
    append_message(account, raw)
    async with served(account) as client:
        page = structured(await client.call_tool("search_messages", {}))
        return check_fenced(await client.call_tool("get_message", {"id": page["messages"][0]["id"]}), False)


@pytest.mark.matrix
async def test_an_invitation_and_one_click_unsubscribe_on_every_server(empty_account: Account) -> None:
    headers = (
        "List-Unsubscribe: <mailto:leave@lists.example.com?subject=unsubscribe>,",
        " <https://lists.example.com/u/7>",
        ONE_CLICK,
    )
    message = await read_only_message(empty_account, invitation_mail(calendar(meeting()), headers=headers))
    invitation = message["invitation"]
    assert (invitation["part_id"], invitation["method"], invitation["event_count"]) == ("2", "REQUEST", 1)
    (shown,) = invitation["events"]
    assert shown["summary"] == "Planning meeting"
    assert (shown["start"], shown["end"]) == ("2026-12-10T10:00:00+01:00", "2026-12-10T11:00:00+01:00")
    assert (shown["time_zone"], shown["end_time_zone"], shown["all_day"]) == ("Europe/Berlin", "Europe/Berlin", False)
    assert message["list_unsubscribe"] == {
        "uris": ["mailto:leave@lists.example.com?subject=unsubscribe", "https://lists.example.com/u/7"],
        "left_out": 0,
        "one_click": True,
    }
    assert message["body"]["text"] == "You are invited." and message["notes"] == []


async def test_a_request_shows_its_organizer_attendees_and_place(empty_account: Account) -> None:
    message = await read_only_message(
        empty_account, invitation_mail(calendar(meeting("DESCRIPTION:Agenda:\\n1. budget")))
    )
    (shown,) = message["invitation"]["events"]
    assert shown["organizer"] == {"address": "ann@example.com", "name": "Ann Organizer"}
    assert shown["attendees"] == [
        {"address": "bob@example.net", "name": "Bob", "role": "REQ-PARTICIPANT", "status": "NEEDS-ACTION"},
        {"address": "demo@example.org", "name": "Demo", "role": "OPT-PARTICIPANT", "status": "ACCEPTED"},
    ]
    assert (shown["location"], shown["description"], shown["sequence"]) == ("Room 4.2", "Agenda:\n1. budget", 0)
    assert (shown["attendee_count"], shown["recurrence"], shown["status"]) == (2, None, None)
    # the calendar part is still an attachment get_attachments can fetch
    assert [(a["part_id"], a["type"]) for a in message["attachments"]] == [("2", "text/calendar")]
    assert message["list_unsubscribe"] is None


async def test_a_cancellation_says_so(empty_account: Account) -> None:
    cancelled = meeting("STATUS:CANCELLED").copy()
    cancelled[cancelled.index("SEQUENCE:0")] = "SEQUENCE:2"
    raw = invitation_mail(calendar(cancelled, method="CANCEL"), subject="Cancelled: Planning", method="CANCEL")
    invitation = (await read_only_message(empty_account, raw))["invitation"]
    assert invitation["method"] == "CANCEL"
    assert (invitation["events"][0]["status"], invitation["events"][0]["sequence"]) == ("CANCELLED", 2)


async def test_an_all_day_event_has_dates_and_no_time_zone(empty_account: Account) -> None:
    day = event("DTSTART;VALUE=DATE:20261224", "DTEND;VALUE=DATE:20261225", summary="Office closed")
    (shown,) = (await read_only_message(empty_account, invitation_mail(calendar(day))))["invitation"]["events"]
    assert (shown["start"], shown["end"], shown["all_day"]) == ("2026-12-24", "2026-12-25", True)
    assert (shown["time_zone"], shown["end_time_zone"]) == (None, None)


async def test_a_recurring_event_shows_its_rule_and_an_end_from_its_duration(empty_account: Account) -> None:
    weekly = event(
        "DTSTART:20261207T080000Z", "DURATION:PT30M", "RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=10", summary="Standup"
    )
    (shown,) = (await read_only_message(empty_account, invitation_mail(calendar(weekly))))["invitation"]["events"]
    assert (shown["start"], shown["end"], shown["time_zone"]) == (
        "2026-12-07T08:00:00+00:00",
        "2026-12-07T08:30:00+00:00",
        "UTC",
    )
    assert shown["recurrence"] == "FREQ=WEEKLY;COUNT=10;BYDAY=MO"
    assert shown["end_time_zone"] is None


async def test_an_ics_attachment_is_read_too(empty_account: Account) -> None:
    message = await read_only_message(empty_account, invitation_mail(calendar(meeting()), attached=True))
    assert message["invitation"]["part_id"] == "2"
    assert message["invitation"]["events"][0]["summary"] == "Planning meeting"
    assert [a["filename"] for a in message["attachments"]] == ["invite.ics"]


async def test_what_is_not_icalendar_is_left_out_with_a_note(empty_account: Account) -> None:
    message = await read_only_message(empty_account, invitation_mail("this is no calendar\r\n"))
    assert message["invitation"] is None
    assert message["notes"] == ["The calendar part 2 is not iCalendar that can be read: its invitation is left out."]
    assert message["body"]["text"] == "You are invited."


async def test_a_field_that_cannot_be_read_is_left_out_with_a_note(empty_account: Account) -> None:
    broken = event("DTSTART:the tenth of December", "SEQUENCE:second", "LOCATION:Room 1")
    message = await read_only_message(empty_account, invitation_mail(calendar(broken)))
    (shown,) = message["invitation"]["events"]
    assert (shown["start"], shown["end"], shown["sequence"], shown["location"]) == (None, None, None, "Room 1")
    assert message["notes"] == [
        "Some fields of the invitation in part 2 could not be read and are left out: start, sequence."
    ]


async def test_events_and_attendees_are_bounded(empty_account: Account) -> None:
    crowd = [f"ATTENDEE;CN=Guest {n}:mailto:guest{n}@example.net" for n in range(MAX_ATTENDEES + 30)]
    events = [meeting(*crowd)] + [
        event("DTSTART:20261210T100000Z", uid=f"e{n}", summary=f"Event {n}") for n in range(7)
    ]
    message = await read_only_message(empty_account, invitation_mail(calendar(*events)))
    invitation = message["invitation"]
    assert (len(invitation["events"]), invitation["event_count"]) == (MAX_EVENTS, 8)
    first = invitation["events"][0]
    assert (len(first["attendees"]), first["attendee_count"]) == (MAX_ATTENDEES, MAX_ATTENDEES + 32)
    assert first["attendees"][:2] == [
        {"address": a.rsplit(":", 1)[1], "name": n, "role": r, "status": s}
        for a, (n, r, s) in zip(
            ATTENDEES,
            [("Bob", "REQ-PARTICIPANT", "NEEDS-ACTION"), ("Demo", "OPT-PARTICIPANT", "ACCEPTED")],
            strict=True,
        )
    ]


async def test_a_calendar_over_the_bound_is_not_read(empty_account: Account) -> None:
    padding = [f"X-PADDING-{n}:{'x' * 60}" for n in range(CALENDAR_BYTES // 70 + 10)]
    message = await read_only_message(empty_account, invitation_mail(calendar(meeting(*padding))))
    assert message["invitation"] is None
    assert message["notes"] == [
        "The calendar part 2 is larger than 256 KiB: its invitation is not read (get_attachments returns it)."
    ]
    assert message["attachments"][0]["part_id"] == "2"


async def test_a_message_without_an_invitation_has_none(empty_account: Account) -> None:
    raw = b"From: a@example.com\r\nTo: demo@example.org\r\nSubject: hi\r\n\r\nhello\r\n"
    message = await read_only_message(empty_account, raw)
    assert (message["invitation"], message["list_unsubscribe"], message["notes"]) == (None, None, [])


@pytest.fixture
def listener() -> Iterator[tuple[int, list[str]]]:
    """A TCP listener on loopback (its port) and what it heard: each connection made to it, for http or https."""
    heard: list[str] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                connection, peer = server.accept()
                heard.append(str(peer))
                connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], heard
    finally:
        stop.set()
        thread.join()
        server.close()


async def test_unsubscribe_addresses_are_shown_and_never_visited(
    empty_account: Account, listener: tuple[int, list[str]]
) -> None:
    port, heard = listener
    uris = [
        f"https://127.0.0.1:{port}/unsubscribe?id=1",
        f"http://127.0.0.1:{port}/u",
        "mailto:leave@lists.example.com",
    ]
    header = "List-Unsubscribe: " + ", ".join(f"<{uri}>" for uri in uris)
    message = await read_only_message(empty_account, invitation_mail(calendar(meeting()), headers=(header, ONE_CLICK)))
    assert message["list_unsubscribe"] == {"uris": uris, "left_out": 0, "one_click": True}
    assert heard == []


@pytest.mark.parametrize(
    ("header", "post", "uris", "left_out", "one_click"),
    [
        ("<https://l.example/u>", "List-Unsubscribe=One-Click", ["https://l.example/u"], 0, True),
        ("<https://l.example/u>", "", ["https://l.example/u"], 0, False),
        ("<mailto:u@l.example>", "List-Unsubscribe=One-Click", ["mailto:u@l.example"], 0, False),
        ("<https://l.example/u>", "List-Unsubscribe=One-Click-Maybe", ["https://l.example/u"], 0, False),
        ("<javascript:alert(1)>, <ftp://l.example/u>, <mailto:u@l.example>", "", ["mailto:u@l.example"], 2, False),
        (f"<https://l.example/{'a' * MAX_URI_CHARS}>", "List-Unsubscribe=One-Click", [], 1, False),
        (
            ", ".join(f"<mailto:u{n}@l.example>" for n in range(9)),
            "",
            [f"mailto:u{n}@l.example" for n in range(MAX_URIS)],
            5,
            False,
        ),
        ("<https://l.example/ u ?a=1>", "", ["https://l.example/u?a=1"], 0, False),
        ("no brackets at all", "", [], 0, False),
    ],
)
def test_the_addresses_shown_and_one_click(
    header: str, post: str, uris: list[str], left_out: int, one_click: bool
) -> None:
    shown = list_unsubscribe(header, post)
    assert shown is not None
    assert (shown.uris, shown.left_out, shown.one_click) == (uris, left_out, one_click)
    assert list_unsubscribe("  ", post) is None


async def test_a_time_zone_the_invitation_defines_is_named_not_applied(empty_account: Account) -> None:
    """A VTIMEZONE is the sender's: icalendar would expand its rules (for hours, for some) and keep it for every
    later invitation of the process under its name; its events show their local time and the zone's name."""
    zone = ["BEGIN:VTIMEZONE", "TZID:Europe/Own", "BEGIN:STANDARD", "DTSTART:19700101T000000"]
    zone += ["TZOFFSETFROM:+0500", "TZOFFSETTO:+0500", "END:STANDARD", "END:VTIMEZONE"]
    zoned = event("DTSTART;TZID=Europe/Own:20261210T100000")
    message = await read_only_message(empty_account, invitation_mail(calendar(zone, zoned)))
    (shown,) = message["invitation"]["events"]
    assert (shown["start"], shown["time_zone"]) == ("2026-12-10T10:00:00", "Europe/Own")


def test_a_property_written_twice_shows_its_first_value() -> None:
    twice = event(
        "SUMMARY:second",
        "DTSTART;TZID=Europe/Berlin:20261210T100000",
        "DTSTART:20261211T100000Z",
        "DURATION:PT1H",
        "SEQUENCE:1",
        "SEQUENCE:2",
        ORGANIZER,
        "ORGANIZER:mailto:other@example.com",
        summary="first",
    )
    found, notes = invitation(CalendarSource(Part("2", "text/calendar"), calendar(twice)))
    assert found is not None and notes == []
    (shown,) = found.events
    assert (shown.summary, shown.start, shown.end) == (
        "first",
        "2026-12-10T10:00:00+01:00",
        "2026-12-10T11:00:00+01:00",
    )
    assert (shown.sequence, shown.organizer and shown.organizer.address) == (1, "ann@example.com")
