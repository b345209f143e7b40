"""A calendar invitation shown as its event: a message's `text/calendar` part (or `.ics` attachment), parsed.

Everything in an invitation was written by its sender, so every text of it is a `SenderLine`/`SenderBlock`
(fenced, `fence.py`) and is read by the warnings (`invitation_places`). It is read bounded and never fails
the read of the message: a part over `CALENDAR_BYTES` is not fetched; at most `MAX_EVENTS` events and
`MAX_ATTENDEES` attendees each are shown (with the counts); a part the iCalendar parser (`icalendar`)
refuses, or a field it cannot read, is left out with a note in this server's own words (never the
parser's message, which quotes the sender). Nothing in it is followed or fetched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import partial
from typing import Any, TypeVar

import icalendar
from icalendar.parser import Contentline, Contentlines
from pydantic import BaseModel, Field

from .fence import SenderBlock, SenderLine
from .parts import Part

#: the most bytes of a calendar part read: larger ones are not fetched (and parsing stays well under a second)
CALENDAR_BYTES = 256 * 1024
MAX_EVENTS = 5
MAX_ATTENDEES = 50
MAX_DESCRIPTION_CHARS = 4000
_CALENDAR_TYPES = ("text/calendar", "application/ics")

T = TypeVar("T")


class CalendarAddress(BaseModel):
    """Someone named in an invitation, as its sender wrote them."""

    address: SenderLine = Field(description="The calendar address, mailto: left out.")
    name: SenderLine | None = Field(default=None, description="Their name (CN), when given.")


class Attendee(CalendarAddress):
    role: SenderLine | None = Field(default=None, description="ROLE as given, e.g. REQ-PARTICIPANT, OPT-PARTICIPANT.")
    status: SenderLine | None = Field(
        default=None, description="Participation status (PARTSTAT) as given, e.g. NEEDS-ACTION, ACCEPTED, DECLINED."
    )


class CalendarEvent(BaseModel):
    """One event of an invitation; a field its sender left out, or that could not be read, is null."""

    summary: SenderLine | None = None
    description: SenderBlock | None = Field(default=None, description=f"Cut at {MAX_DESCRIPTION_CHARS} characters.")
    description_truncated: bool = False
    location: SenderLine | None = None
    start: str | None = Field(default=None, description="ISO 8601: a date for an all-day event, else a date-time.")
    end: str | None = Field(default=None, description="ISO 8601, from DTEND or start plus DURATION.")
    all_day: bool = False
    time_zone: SenderLine | None = Field(
        default=None, description="The start's time zone as given (TZID), UTC, or null for a floating time."
    )
    end_time_zone: SenderLine | None = Field(
        default=None, description="The end's time zone (DTEND's), the same way; null when the end comes from DURATION."
    )
    organizer: CalendarAddress | None = None
    attendees: list[Attendee] = Field(default_factory=list, description=f"The first {MAX_ATTENDEES}.")
    attendee_count: int = Field(default=0, description="All attendees the event names.")
    recurrence: SenderLine | None = Field(
        default=None, description="The recurrence rule (RRULE) as given (its parts possibly reordered), not expanded."
    )
    sequence: int | None = Field(default=None, description="SEQUENCE: higher is a newer version of the invitation.")
    status: SenderLine | None = Field(default=None, description="STATUS as given, e.g. CONFIRMED, CANCELLED.")


class Invitation(BaseModel):
    """A calendar invitation the message carries, as its sender wrote it: shown, never acted on."""

    part_id: str = Field(description="The part it was read from (also in attachments).")
    method: SenderLine | None = Field(
        default=None, description="METHOD as given: REQUEST (an invitation), CANCEL, REPLY, PUBLISH, ..."
    )
    events: list[CalendarEvent] = Field(description=f"The first {MAX_EVENTS} events.")
    event_count: int = Field(description="All events the calendar holds.")


@dataclass(frozen=True)
class CalendarSource:
    """A calendar part of a message and its text; `text` None: larger than `CALENDAR_BYTES`, not fetched."""

    part: Part
    text: str | None


def calendar_part(parts: Iterable[Part]) -> Part | None:
    """The part an invitation is read from: the first text/calendar, else application/ics, else a file named .ics."""
    candidates = list(parts)
    for kind in _CALENDAR_TYPES:
        found = next((part for part in candidates if part.content_type == kind), None)
        if found is not None:
            return found
    return next((p for p in candidates if (p.filename or "").lower().endswith(".ics")), None)


def calendar_fetches(part: Part | None) -> tuple[tuple[Part, int], ...]:
    """The (part, bytes) to fetch for `part`: all of it, or nothing when there is none or it is too large."""
    return ((part, part.size),) if part is not None and part.size <= CALENDAR_BYTES else ()


class _Reading:
    """What one invitation's fields could not be read: `note`s in this server's words."""

    def __init__(self, part_id: str) -> None:
        self.part_id = part_id
        self.unread: list[str] = []

    def field(self, what: str, read: Callable[[], T]) -> T | None:
        try:
            return read()
        except Exception:  # hostile input may break the parser in ways nobody listed: the field is left out
            self.unread.append(what)
            return None

    def notes(self) -> list[str]:
        if not self.unread:
            return []
        fields = ", ".join(dict.fromkeys(self.unread))
        return [f"Some fields of the invitation in part {self.part_id} could not be read and are left out: {fields}."]


def _text(value: Any) -> str:
    if isinstance(value, icalendar.prop.vBroken):
        raise ValueError("unreadable")
    return str(value)


def _one(component: Any, name: str) -> Any:
    """The property `name` of `component`, the first where the sender wrote it more than once; None without it."""
    value = component.get(name)
    if isinstance(value, list):
        return value[0] if value else None
    return value


def _optional(component: Any, name: str) -> str | None:
    value = _one(component, name)
    return None if value is None else _text(value)


def _param(prop: Any, name: str) -> str | None:
    value = getattr(prop, "params", {}).get(name)
    if value is None:
        return None
    return ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def _address(prop: Any) -> str:
    text = _text(prop)
    return text[7:] if text.lower().startswith("mailto:") else text


def _value(component: Any, name: str) -> Any:
    """The parsed value of the property `name` (a date, a date-time, a duration), None without it."""
    prop = _one(component, name)
    if prop is None:
        return None
    if isinstance(prop, icalendar.prop.vBroken):
        raise ValueError("unreadable")
    return prop.dt


def _when(component: Any, name: str) -> date | None:
    value = _value(component, name)
    if value is not None and not isinstance(value, date):
        raise ValueError("not a date")
    return value


def _end(component: Any, start: date | None) -> date | None:
    end = _when(component, "DTEND")
    if end is None and start is not None:
        duration = _value(component, "DURATION")
        end = start + duration if isinstance(duration, timedelta) else None
    return end


def _time_zone(component: Any, name: str) -> str | None:
    tzid = _param(_one(component, name), "TZID")
    if tzid is not None:
        return tzid
    value = _value(component, name)
    return "UTC" if isinstance(value, datetime) and value.utcoffset() == timedelta(0) else None


def _attendees(component: Any) -> list[Any]:
    found = component.get("ATTENDEE")
    return [] if found is None else found if isinstance(found, list) else [found]


def _attendee(prop: Any) -> Attendee:
    return Attendee(
        address=_address(prop), name=_param(prop, "CN"), role=_param(prop, "ROLE"), status=_param(prop, "PARTSTAT")
    )


def _organizer(component: Any) -> CalendarAddress | None:
    prop = _one(component, "ORGANIZER")
    return None if prop is None else CalendarAddress(address=_address(prop), name=_param(prop, "CN"))


def _sequence(component: Any) -> int | None:
    value = _optional(component, "SEQUENCE")
    return None if value is None else int(value)


def _event(component: Any, reading: _Reading) -> CalendarEvent:
    field = reading.field
    start = field("start", lambda: _when(component, "DTSTART"))
    end = field("end", lambda: _end(component, start))
    has_end = component.get("DTEND") is not None
    description = field("description", lambda: _optional(component, "DESCRIPTION")) or None
    attendees = field("attendees", lambda: _attendees(component)) or []
    shown = [a for a in (field("an attendee", partial(_attendee, p)) for p in attendees[:MAX_ATTENDEES]) if a]
    return CalendarEvent(
        summary=field("summary", lambda: _optional(component, "SUMMARY")),
        description=description[:MAX_DESCRIPTION_CHARS] if description else None,
        description_truncated=len(description or "") > MAX_DESCRIPTION_CHARS,
        location=field("location", lambda: _optional(component, "LOCATION")),
        start=start.isoformat() if start else None,
        end=end.isoformat() if end else None,
        all_day=start is not None and not isinstance(start, datetime),
        time_zone=field("time zone", lambda: _time_zone(component, "DTSTART")) if start else None,
        end_time_zone=field("time zone", lambda: _time_zone(component, "DTEND")) if end and has_end else None,
        organizer=field("organizer", lambda: _organizer(component)),
        attendees=shown,
        attendee_count=len(attendees),
        recurrence=field("recurrence", lambda: _rule(component)),
        sequence=field("sequence", lambda: _sequence(component)),
        status=field("status", lambda: _optional(component, "STATUS")),
    )


def _rule(component: Any) -> str | None:
    rule = _one(component, "RRULE")
    if rule is None:
        return None
    if isinstance(rule, icalendar.prop.vBroken):
        raise ValueError("unreadable")
    return bytes(rule.to_ical()).decode("utf-8", "replace")


def _time_zone_boundary(line: Contentline) -> str | None:
    """BEGIN or END when `line` opens or closes a VTIMEZONE as icalendar's parser reads it, else None."""
    if "VTIMEZONE" not in line.upper():
        return None
    try:
        name, _, value = line.parts()
    except ValueError:
        return None
    name = name.upper()
    return name if name in ("BEGIN", "END") and value.upper() == "VTIMEZONE" else None


def without_time_zones(text: str) -> str:
    """`text` unfolded, without its VTIMEZONE components (and without any line that ends one).

    icalendar turns each VTIMEZONE it parses into a time zone, expanding its rules from their first year (a rule
    every hour from 1601 takes hours), and caches it for the whole process under its TZID: a stranger's zone would
    then stand for that name in every later invitation, and each new name would grow the cache. Without them a
    TZID still shows as given, an IANA name (Europe/Berlin) still resolves, another is shown as local time."""
    kept: list[str] = []
    depth = 0
    for line in Contentlines.from_ical(text):  # type: ignore[no-untyped-call]  # icalendar leaves it untyped
        boundary = _time_zone_boundary(line)
        if boundary == "BEGIN":
            depth += 1
        elif boundary == "END":
            depth = max(depth - 1, 0)
        elif depth == 0:
            kept.append(line)
    return "\r\n".join(kept)


def invitation(source: CalendarSource | None) -> tuple[Invitation | None, list[str]]:
    """The invitation `source` holds and notes on what of it could not be read; (None, notes) when none can be."""
    if source is None:
        return None, []
    part_id = source.part.part_id
    if source.text is None:
        return None, [
            f"The calendar part {part_id} is larger than {CALENDAR_BYTES // 1024} KiB: its invitation is not read "
            "(get_attachments returns it)."
        ]
    try:
        calendar = icalendar.Calendar.from_ical(without_time_zones(source.text))
        events = list(calendar.walk("VEVENT"))
    except Exception:  # hostile input may break the parser in ways nobody listed
        return None, [f"The calendar part {part_id} is not iCalendar that can be read: its invitation is left out."]
    reading = _Reading(part_id)
    found = Invitation(
        part_id=part_id,
        method=reading.field("method", lambda: _optional(calendar, "METHOD")),
        events=[_event(event, reading) for event in events[:MAX_EVENTS]],
        event_count=len(events),
    )
    return found, reading.notes()


def invitation_places(found: Invitation | None) -> list[tuple[str, str]]:
    """The texts of the sender an invitation shows, by place, for the warnings."""
    if found is None:
        return []
    places = [("invitation method", found.method or "")]
    for event in found.events:
        places += [
            ("invitation summary", event.summary or ""),
            ("invitation description", event.description or ""),
            ("invitation location", event.location or ""),
            ("invitation recurrence", event.recurrence or ""),
        ]
        people = [event.organizer, *event.attendees] if event.organizer else list(event.attendees)
        places += [("invitation attendee", f"{p.name or ''} {p.address}") for p in people]
    return [place for place in places if place[1].strip()]
