"""`IMAP_MAILBOX_SENT`, `…_DRAFTS`, `…_TRASH`, `…_JUNK`, `…_ARCHIVE`: the mailbox the user names for a role.

The setting is the user's word, so it wins over the server's SPECIAL-USE attributes and over the names
(`imap.mailboxes`). A name the account does not have is not replaced by another mailbox: the role then has none,
and the tools that need it say which setting names what (`missing_role_advice`), since mail moved to a mailbox the
user did not choose (a delete into the wrong Trash) is worse than a refusal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..setting_values import ConfigError
from .role_names import ROLE_SETTINGS, NamedRole

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def role_mailboxes(env: Mapping[str, str]) -> tuple[tuple[NamedRole, str], ...]:
    """Each role an `IMAP_MAILBOX_*` setting names, with the mailbox name as given (levels separated as the server
    separates them, or by '/'); `ConfigError` for a name no server would take, INBOX, or one named for two roles."""
    named: dict[NamedRole, str] = {}
    for role, setting in ROLE_SETTINGS.items():
        value = env.get(setting, "").strip()
        if not value:
            continue
        if _CONTROL.search(value):
            raise ConfigError(f"{setting}={value!r} is not valid: give a mailbox name without control characters.")
        if value.upper() == "INBOX":
            raise ConfigError(f"{setting}={value!r} is not valid: INBOX cannot be the {role} mailbox; name another.")
        twin = next((ROLE_SETTINGS[other] for other, name in named.items() if name == value), None)
        if twin is not None:
            raise ConfigError(
                f"{setting}={value!r} is not valid: {twin} names the same mailbox, and one mailbox cannot have two "
                "roles; name another, or unset one of them."
            )
        named[role] = value
    return tuple(named.items())
