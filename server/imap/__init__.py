"""The IMAP side every feature shares: connection, pool, `failures` (library exceptions as
`MailboxError`s), the small commands and imapclient's private API (`fetch`), UID sets, message
ids and lookup (`MessageSelection`), mailbox listing and roles."""
