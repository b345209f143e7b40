"""Changing a mailbox: messages (`PlannedMessageChange`), copies already made, folders
(`PlannedFolderChange`), flags and drafts, and the approval `questions` a person is asked."""
