"""The time zone a person reads times in: the dialogs' "today 09:14" and "sent at 09:14".

IMAP_MCP_DIALOG_TIMEZONE names it (an IANA name such as `Europe/Berlin`); unset, it is the server's local zone
(`TZ`, else the system's), read when a time is written, so a server whose zone changes follows it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

SETTING = "IMAP_MCP_DIALOG_TIMEZONE"


class UnknownZone(ValueError):
    """The name is no time zone this system knows."""


def zone_named(name: str) -> ZoneInfo:
    """The IANA zone `name`, or `UnknownZone`."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UnknownZone(name) from None


@dataclass(frozen=True)
class DialogClock:
    """Now, in the zone a dialog's times are written in: `zone` (an IANA name), or None for the server's local one."""

    zone: str | None = None

    def now(self) -> dt.datetime:
        if self.zone is None:
            return dt.datetime.now().astimezone()
        return dt.datetime.now(zone_named(self.zone))

    def label(self) -> str:
        """How the dialog names the zone: its IANA name, or the local zone's abbreviation (`UTC`, `CET`)."""
        return self.zone or (self.now().tzname() or "the server's local time")
