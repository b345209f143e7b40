"""Mailboxes themselves: listing them with their roles (`imap.mailboxes`), creating, renaming and deleting them
(`folders`), and the questions a person is asked before one is renamed or deleted (`questions`)."""
