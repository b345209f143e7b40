"""A mailing list's unsubscribe addresses (RFC 2369 `List-Unsubscribe`) and RFC 8058 one-click: shown, never followed.

The sender wrote both headers, so each address is a `SenderLine` (fenced) and read by the warnings. Only mailto:,
https: and http: URIs are shown, at most `MAX_URIS` of at most `MAX_URI_CHARS` characters; the rest are counted.
One-click is what the sender offers (`List-Unsubscribe-Post: List-Unsubscribe=One-Click` beside an https URI);
RFC 8058 wants a DKIM signature over both headers, which this server does not check. No request is ever made.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from .fence import SenderLine

MAX_URIS = 4
MAX_URI_CHARS = 2048
#: RFC 2369: each URI between angle brackets, separated by commas (comments and spaces around them ignored)
_BRACKETED = re.compile(r"<([^<>]*)>")
_SCHEMES = ("mailto:", "https:", "http:")
ONE_CLICK = "list-unsubscribe=one-click"


class ListUnsubscribe(BaseModel):
    """How the sender says to leave its list: shown only, never visited or written to by this server."""

    uris: list[SenderLine] = Field(
        description=f"The mailto:, https: and http: addresses of List-Unsubscribe, in its order (at most {MAX_URIS})."
    )
    left_out: int = Field(description="Addresses not shown: other schemes, too long, or beyond the first ones.")
    one_click: bool = Field(
        description="True when the sender offers RFC 8058 one-click (List-Unsubscribe-Post: "
        "List-Unsubscribe=One-Click with an https address): a POST to that address unsubscribes. Not verified "
        "(RFC 8058 wants a DKIM signature over both headers)."
    )


def _usable(uri: str) -> bool:
    return uri.lower().startswith(_SCHEMES) and len(uri) <= MAX_URI_CHARS


def list_unsubscribe(header: str, post: str) -> ListUnsubscribe | None:
    """The addresses of a `List-Unsubscribe` header and whether `post` (its `List-Unsubscribe-Post`) offers
    one-click; None when the message has no such header."""
    if not header.strip():
        return None
    found = ["".join(uri.split()) for uri in _BRACKETED.findall(header)]
    usable = [uri for uri in found if _usable(uri)]
    https = any(uri.lower().startswith("https:") for uri in usable)
    return ListUnsubscribe(
        uris=usable[:MAX_URIS],
        left_out=len(found) - min(len(usable), MAX_URIS),
        one_click=https and post.strip().lower() == ONE_CLICK,
    )
