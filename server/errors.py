"""The one error tree: every refusal or failure a tool reports is an `ImapMcpError`.

Each layer has one base, and subclasses only where a caller acts differently:

- `MailboxError`: the IMAP side refused or failed (no such mailbox, a stale id, a lost connection,
  a timeout, a change that cannot run as asked). Raw imapclient, imaplib, socket and ssl
  exceptions never leave the pool: `imap.failures.explain` turns each into a `MailboxError`.
- `OutgoingError`: mail to send cannot be built or was not taken (a bad address, a header
  injection, an SMTP refusal).

The message of every one is written for the model: what went wrong and what to do. The tools
turn them into tool errors in one place, `tools.errors`; anything else that escapes a tool is a
crash, which the SDK reports with a generic text (tests tell the two apart).
"""

from __future__ import annotations


class ImapMcpError(Exception):
    """A refusal or failure whose message the model can act on."""


class MailboxError(ImapMcpError):
    """The IMAP server refused or failed, or the mailbox is not as the request needs."""


class OutgoingError(ImapMcpError, ValueError):
    """Mail to send cannot be built as given, or was not taken; the message says what to change."""
