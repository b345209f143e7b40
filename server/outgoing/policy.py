"""The operator's send policy: who mail may go to, how many at once, and whether a new recipient is confirmed twice.

Set in the environment or per account in the accounts file:

- `IMAP_MCP_SEND_ALLOW`: comma-separated addresses (`alice@example.com`), domains (`example.com`: that domain
  exactly) and wildcards (`*.example.com`: every subdomain of example.com, not example.com itself). Unset: any
  recipient. A message with one recipient outside the list is refused whole.
- `IMAP_MCP_SEND_MAX_RECIPIENTS`: at most this many recipients (to, cc and bcc together) in one message, 1 to
  `compose.MAX_RECIPIENTS`. Unset: `compose.MAX_RECIPIENTS`.
- `IMAP_MCP_SEND_CONFIRM_NEW`: `true` asks a second confirmation for a message to a recipient no message in the
  Sent mailbox was ever addressed to (or whom that could not be checked): a second box to tick in the dialog, a
  second token on the token path.

The policy judges the recipients before anyone is asked (`check`), so a refusal asks no one and sends nothing, and
it names the rule. It is the server's, never the caller's: no argument changes it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from imap_mcp.protocol.texts import word

from ..errors import OutgoingError
from .compose import MAX_RECIPIENTS

ALLOW = "IMAP_MCP_SEND_ALLOW"
MAX = "IMAP_MCP_SEND_MAX_RECIPIENTS"
CONFIRM_NEW = "IMAP_MCP_SEND_CONFIRM_NEW"
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_DOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})+")
_LOCAL = re.compile(r"[a-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}")


class RefusedByPolicy(OutgoingError):
    """The operator's send policy does not allow this message; nothing was sent and nobody was asked."""


@dataclass(frozen=True)
class SendPolicy:
    """What the operator allows outgoing mail: `allow` (empty: anyone), `max_recipients`, `confirm_new`."""

    allow: tuple[str, ...] = ()
    max_recipients: int = MAX_RECIPIENTS
    confirm_new: bool = False

    def allows(self, address: str) -> bool:
        """Whether `address` (an addr-spec) is one the allow list names, by address, domain or wildcard."""
        if not self.allow:
            return True
        address = address.lower()
        domain = address.rpartition("@")[2]
        return any(
            address == entry
            if "@" in entry
            else domain.endswith(entry[1:])
            if entry.startswith("*.")
            else domain == entry
            for entry in self.allow
        )

    def check(self, recipients: Sequence[str]) -> None:
        """`RefusedByPolicy`, naming the rule, when the policy does not allow mail to `recipients` (addr-specs)."""
        if len(recipients) > self.max_recipients:
            raise RefusedByPolicy(
                f"The message has {len(recipients)} recipients; the operator's send policy allows at most "
                f"{self.max_recipients} in one message ({MAX}). Nothing was sent and nobody was asked: send it to "
                "fewer people, or ask the operator."
            )
        refused = [address for address in recipients if not self.allows(address)]
        if refused:
            raise RefusedByPolicy(
                f"The operator's send policy does not allow mail to {', '.join(word(a) for a in refused)}: "
                f"{ALLOW} allows only {', '.join(self.allow)}. Nothing was sent and nobody was asked; do not try "
                "another way to reach them unless the person asks the operator to allow it."
            )

    def lines(self) -> list[str]:
        """The policy in words, one line per rule (`imap-mcp check`)."""
        allowed = ", ".join(self.allow) if self.allow else "any address (IMAP_MCP_SEND_ALLOW is not set)"
        second = "asked for" if self.confirm_new else "not asked for"
        return [
            f"recipients allowed: {allowed}",
            f"recipients per message: at most {self.max_recipients}",
            f"second confirmation for a recipient never written to before: {second}",
        ]


def read_send_policy(env: Mapping[str, str]) -> SendPolicy:
    """The send policy in `env`; `ValueError` with one line per invalid setting."""
    problems: list[str] = []
    allow: tuple[str, ...] = ()
    maximum = MAX_RECIPIENTS
    raw_allow = env.get(ALLOW, "").strip()
    if raw_allow:
        entries = tuple(entry.strip().lower() for entry in raw_allow.split(","))
        bad = [entry for entry in entries if not _valid_entry(entry)]
        if bad:
            problems.append(
                f"{ALLOW}={raw_allow!r} is not valid ({', '.join(repr(b) for b in bad)}): use comma-separated "
                "addresses (alice@example.com), domains (example.com) and wildcards for subdomains (*.example.com)."
            )
        allow = tuple(dict.fromkeys(entries))
    raw_max = env.get(MAX, "").strip()
    if raw_max:
        if raw_max.isascii() and raw_max.isdigit() and 1 <= int(raw_max) <= MAX_RECIPIENTS:
            maximum = int(raw_max)
        else:
            problems.append(f"{MAX}={raw_max!r} is not valid: use a whole number from 1 to {MAX_RECIPIENTS}.")
    raw_confirm = env.get(CONFIRM_NEW)
    if raw_confirm is not None and raw_confirm not in ("true", "false"):
        problems.append(f"{CONFIRM_NEW}={raw_confirm!r} is not valid: use true or false.")
    if problems:
        raise ValueError("\n".join(problems))
    return SendPolicy(allow, maximum, raw_confirm == "true")


def _valid_entry(entry: str) -> bool:
    if "@" in entry:
        local, _, domain = entry.rpartition("@")
        return bool(_LOCAL.fullmatch(local)) and bool(_DOMAIN.fullmatch(domain))
    return bool(_DOMAIN.fullmatch(entry.removeprefix("*.")))
