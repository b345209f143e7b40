"""The demo: a private Dovecot with sample mail and the `demo` command; never in the request path."""
