"""The time zone a person reads times in: the dialogs' "today 09:14" and "sent at 09:14".

IMAP_MCP_DIALOG_TIMEZONE names it (an IANA name such as `Europe/Berlin`); unset, it is the server's local zone
(`TZ`, else the system's), read when a time is written, so a server whose zone changes follows it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

SETTING = "IMAP_MCP_DIALOG_TIMEZONE"


def zone_named(name: str) -> ZoneInfo | None:
    """The IANA zone `name`, or None when this system's zone database has no such zone."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


@dataclass(frozen=True)
class DialogClock:
    """Now, in the zone a dialog's times are written in: `zone` (an IANA name), or None for the server's local one."""

    zone: str | None = None

    def now(self) -> dt.datetime:
        zone = zone_named(self.zone) if self.zone is not None else None
        return dt.datetime.now(zone) if zone is not None else dt.datetime.now().astimezone()

    def label(self) -> str:
        """How the dialog names the zone: its IANA name, or the local zone's abbreviation (`UTC`, `CET`)."""
        return self.zone or (self.now().tzname() or "the server's local time")
