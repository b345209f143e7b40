"""The server's branches of the one error tree (its root, `ImapMcpError`, is `protocol.errors`').

At server/'s top level, not in a feature's folder: every feature raises from this tree, and the tools answer from it.

Each layer has one base, and subclasses only where a caller acts differently:

- `ArgumentError`: a tool's arguments cannot be used as given (beyond what its input schema says).
- `MailboxError`: the IMAP side refused or failed (no such mailbox, a stale id, a lost connection,
  a timeout, a change that cannot run as asked). Raw imapclient, imaplib, socket and ssl
  exceptions never leave the pool: `imap.failures.explain` turns each into a `MailboxError`.
- `OutgoingError`: mail to send cannot be built or was not taken (a bad address, a header
  injection, an SMTP refusal).
- `StoreError` (`store.database`), `OAuthError` (`oauth.errors`), `WebhookRefused`
  (`webhooks.operations`), `OutboundError` (`outbound_http`), `ConfigError` (`config`).

The message of every one is written for the model: what went wrong and what to do. The tools
turn them into tool results in one place, where they are registered (`tools.registry`); any
other exception escaping a tool becomes one named internal error there, its traceback logged.
"""

from __future__ import annotations

from imap_mcp.protocol.errors import ImapMcpError

__all__ = ["ArgumentError", "ImapMcpError", "MailboxError", "OutgoingError"]


class ArgumentError(ImapMcpError, ValueError):
    """A tool's arguments cannot be used as given; the message says which and what to give instead."""


class MailboxError(ImapMcpError):
    """The IMAP server refused or failed, or the mailbox is not as the request needs."""


class OutgoingError(ImapMcpError, ValueError):
    """Mail to send cannot be built as given, or was not taken; the message says what to change."""
