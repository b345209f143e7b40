"""Hostile calendar invitations: read with get_message, each is shown bounded or left out with a note, never a failure.

Against Dovecot: a time zone whose rule repeats every hour from 1601 (icalendar would expand it for hours), events
nested nine thousand deep, two thousand events, a line of 200 KB, twenty thousand parameters, a duration past the
end of time, a calendar in base64 of bytes that are no UTF-8, and one
followed by NUL bytes; after them an ordinary message reads as before. And a
Hypothesis property over calendars of random content lines: `invitation` never raises, stays within its bounds,
and its notes never quote the sender.
"""

from __future__ import annotations

import base64
import datetime as dt
import string
from typing import Any

import pytest
from harness import Account, message_ids, served, structured
from hostile.invitation_mail import calendar, event, invitation_mail, meeting
from hypothesis import given, settings
from hypothesis import strategies as st

from imap_mcp.server.reading.invitations import MAX_ATTENDEES, MAX_EVENTS, CalendarSource, Invitation, invitation
from imap_mcp.server.reading.parts import Part

pytestmark = pytest.mark.anyio

RECEIVED = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)
ORDINARY = b"From: friend@example.com\r\nSubject: ordinary\r\n\r\nAn ordinary message.\r\n"


def own_zone(rule: str) -> list[str]:
    """A VTIMEZONE named Evil whose two transitions repeat by `rule` from 1601."""
    sides = [("STANDARD", "+0100", "+0200"), ("DAYLIGHT", "+0200", "+0100")]
    lines = ["BEGIN:VTIMEZONE", "TZID:Evil"]
    for side, offset_from, offset_to in sides:
        lines += [f"BEGIN:{side}", "DTSTART:16010101T000000", f"TZOFFSETFROM:{offset_from}", f"TZOFFSETTO:{offset_to}"]
        lines += [f"RRULE:{rule}", f"END:{side}"]
    return [*lines, "END:VTIMEZONE"]


IN_OWN_ZONE = event("DTSTART;TZID=Evil:20261210T100000", "DTEND;TZID=Evil:20261210T110000")


def nested(depth: int) -> list[str]:
    return ["BEGIN:VEVENT"] * depth + ["END:VEVENT"] * depth


def base64_calendar(raw: bytes) -> bytes:
    """An invitation whose calendar part is `raw` in base64, declared UTF-8."""
    mail = invitation_mail("").replace(
        b"charset=utf-8; method=REQUEST\r\n", b"charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n"
    )
    return mail.replace(b"\r\n\r\n--b--", b"\r\n\r\n" + base64.encodebytes(raw).replace(b"\n", b"\r\n") + b"\r\n--b--")


HOSTILE = {
    "hourly-zone-from-1601": invitation_mail(calendar(own_zone("FREQ=HOURLY"), IN_OWN_ZONE)),
    "secondly-zone-only": invitation_mail(calendar(own_zone("FREQ=SECONDLY"))),
    "nested-nine-thousand-deep": invitation_mail(calendar(nested(9_000))),
    "two-thousand-events": invitation_mail(
        calendar(*[event("DTSTART:20261210T100000Z", uid=f"{n}") for n in range(2_000)])
    ),
    "a-line-of-200-kb": invitation_mail(calendar(meeting(f"DESCRIPTION:{'a' * 200_000}"))),
    "twenty-thousand-parameters": invitation_mail(
        calendar(meeting("X-A;" + ";".join(f"P{n}=v" for n in range(20_000)) + ":v"))
    ),
    "a-duration-past-the-end-of-time": invitation_mail(
        calendar(event("DTSTART:99991231T000000Z", "DURATION:P99999999W"))
    ),
    "end-of-a-zone-closing-an-event": invitation_mail(calendar(["BEGIN:VEVENT", "TZID:Evil", "END:VTIMEZONE"])),
    "no-utf-8": base64_calendar(calendar(meeting(summary="Caf\xe9")).encode("latin-1")),
    "nul-bytes-after-the-end": base64_calendar(calendar(meeting()).encode() + b"\x00\xff\xfe"),
}


def bounded(found: dict[str, Any] | None) -> bool:
    if found is None:
        return True
    events = found["events"]
    return len(events) <= MAX_EVENTS and all(len(e["attendees"]) <= MAX_ATTENDEES for e in events)


async def test_hostile_invitations_are_read_bounded_or_left_out_with_a_note(account: Account) -> None:
    client = account.imap()
    try:
        client.create_folder("Hostile")
        client.append("Hostile", ORDINARY, msg_time=RECEIVED)
        for minute, raw in enumerate(HOSTILE.values(), start=1):
            client.append("Hostile", raw, msg_time=RECEIVED + dt.timedelta(minutes=minute))
    finally:
        client.logout()
    ordinary, *ids = message_ids(account, "Hostile")
    async with served(account) as mcp:
        read = {
            name: structured(await mcp.call_tool("get_message", {"id": id}))
            for name, id in zip(HOSTILE, ids, strict=True)
        }
        again = structured(await mcp.call_tool("get_message", {"id": ordinary}))
    assert again["body"]["text"] == "An ordinary message.\n"
    for name, message in read.items():
        assert message["invitation"] is not None or message["notes"], name
        assert bounded(message["invitation"]), name
    # a zone the invitation defines is not read: its local time and its name are shown
    (zoned,) = read["hourly-zone-from-1601"]["invitation"]["events"]
    assert (zoned["start"], zoned["time_zone"]) == ("2026-12-10T10:00:00", "Evil")
    assert read["two-thousand-events"]["invitation"]["event_count"] == 2_000
    assert read["nested-nine-thousand-deep"]["invitation"]["event_count"] == 9_000
    (far,) = read["a-duration-past-the-end-of-time"]["invitation"]["events"]
    assert far["end"] is None and "end" in read["a-duration-past-the-end-of-time"]["notes"][0]
    assert read["no-utf-8"]["invitation"]["events"][0]["summary"].startswith("Caf")


NAMES = [*("BEGIN", "END", "SUMMARY", "DESCRIPTION", "LOCATION", "DTSTART", "DTEND", "DURATION", "RRULE")]
NAMES += ["ATTENDEE", "ORGANIZER", "SEQUENCE", "STATUS", "METHOD", "TZID", "TZOFFSETFROM", "TZOFFSETTO", "X-SENDERTEXT"]
VALUES = [*("VCALENDAR", "VEVENT", "VTIMEZONE", "STANDARD", "20261210T100000Z", "20261210", "P1D", "PT1H", "-P1W")]
VALUES += ["FREQ=HOURLY", "FREQ=WEEKLY;COUNT=2", "mailto:SENDERTEXT@evil.example", "SENDERTEXT", "Evil", "+0100"]
PARAMETERS = ("", ";TZID=Evil", ";TZID=Europe/Berlin", ";VALUE=DATE", ';CN="SENDERTEXT"', ";ROLE=SENDERTEXT")
TEXT = st.text(alphabet=string.printable.replace("\r", "").replace("\n", "") + "\u00e9\u200b\u202e", max_size=30)


@st.composite
def calendars(draw: st.DrawFn) -> str:
    """A calendar of random content lines from the names, parameters and values above, or any text."""
    lines = draw(
        st.lists(
            st.tuples(
                st.sampled_from(NAMES) | TEXT,
                st.sampled_from(PARAMETERS),
                st.sampled_from(VALUES) | TEXT,
            ).map(lambda parts: f"{parts[0]}{parts[1]}:{parts[2]}"),
            max_size=40,
        )
    )
    return "\r\n".join(["BEGIN:VCALENDAR", *lines, "END:VCALENDAR"]) + "\r\n"


@settings(max_examples=300, deadline=None)
@given(calendars())
def test_any_calendar_is_read_bounded_or_left_out_and_no_note_quotes_it(text: str) -> None:
    found, notes = invitation(CalendarSource(Part("2", "text/calendar"), text))
    assert found is None or isinstance(found, Invitation)
    assert bounded(found.model_dump() if found else None)
    assert not any("SENDERTEXT" in note or "Evil" in note for note in notes)
    if found is None:
        assert notes
