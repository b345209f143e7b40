"""Mail to send: building and checking it, its approval target, replies, the Sent mailbox, SMTP."""
