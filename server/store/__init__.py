"""What outlives a request and is shared by every replica: the store (SQLite or PostgreSQL) and the approval
ledger in it."""
