"""The server's own log: one line per event on stderr, never a secret, subject or body.

At server/'s top level, not in a feature's folder: every feature logs through it.
"""

from __future__ import annotations

import logging
import sys

LOGGER_NAME = "imap_mcp"


def setup_logging(level: int = logging.INFO) -> logging.Logger:
    logger = logging.getLogger(LOGGER_NAME)
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("imap-mcp: %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
    logger.setLevel(level)
    return logger


def get_logger() -> logging.Logger:
    return logging.getLogger(LOGGER_NAME)
