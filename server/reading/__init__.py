"""Reading mail without changing it: search and its order cache, message parts, the reader, attachments."""
