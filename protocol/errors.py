"""The root of imap-mcp's errors: every refusal or failure whose message is written for the model.

Each layer subclasses it (`server.errors`: the mailbox, outgoing mail, the store, arguments;
here, `ApprovalRefused`), and the tools turn every one into a tool error in one place, where
they are registered (`server.tools.registry`). Signals that never reach a caller say so where
they are defined (a seal that does not open, `sealing.SealError`; a cancelled call).
"""

from __future__ import annotations


class ImapMcpError(Exception):
    """A refusal or failure whose message says what went wrong and what to do about it."""


class ApprovalRefused(ImapMcpError):
    """No approval: the person said no or left the box unticked, the dialog failed, or a confirm_token does not
    fit this call. Nothing ran; the message says so."""
