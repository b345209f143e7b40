"""The store's secrets at rest: AES-256-GCM under the `IMAP_MCP_STORE_KEYS` ring (first encrypts, all decrypt).

Each value is bound to its account and field (associated data), so a ciphertext copied into
another row or column does not decrypt. A value no configured key opens is `Unreadable`.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Sequence

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from imap_mcp.sealing import KeyRing

from ..errors import ImapMcpError

PREFIX = "v1."
_NONCE_BYTES = 12


class Unreadable(ImapMcpError):
    """No configured key decrypts this value (keys rotated out, or none configured)."""


def _derived(key: bytes) -> AESGCM:
    material = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"imap-mcp store v1").derive(key)
    return AESGCM(material)


class StoreCipher:
    """Encrypts with the first key of the ring, decrypts with any."""

    __slots__ = ("_aeads",)

    def __init__(self, keys: Sequence[str]) -> None:
        self._aeads = tuple(_derived(key) for key in KeyRing(keys).keys) if keys else ()

    @property
    def can_encrypt(self) -> bool:
        return bool(self._aeads)

    def encrypt(self, plaintext: str, account: str, column: str) -> str:
        if not self._aeads:
            raise Unreadable(
                "IMAP_MCP_STORE_KEYS is not set: nothing can be encrypted; set it to one or more random keys."
            )
        nonce = secrets.token_bytes(_NONCE_BYTES)
        sealed = self._aeads[0].encrypt(nonce, plaintext.encode(), _context(account, column))
        return PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode()

    def decrypt(self, stored: str, account: str, column: str) -> str:
        if not stored.startswith(PREFIX):
            raise Unreadable("a stored webhook setting is not a ciphertext of this server: save the webhook again.")
        try:
            raw = base64.urlsafe_b64decode(stored[len(PREFIX) :])
        except ValueError:
            raise Unreadable(
                "a stored webhook setting is not a ciphertext of this server: save the webhook again."
            ) from None
        nonce, sealed = raw[:_NONCE_BYTES], raw[_NONCE_BYTES:]
        for aead in self._aeads:
            try:
                return aead.decrypt(nonce, sealed, _context(account, column)).decode()
            except InvalidTag:
                continue
        raise Unreadable(
            "no key in IMAP_MCP_STORE_KEYS decrypts the saved webhook settings: save the webhook again (webhook set)."
        )

    def __repr__(self) -> str:
        return f"StoreCipher({len(self._aeads)} key(s))"


def _context(account: str, column: str) -> bytes:
    return f"{account}\x00{column}".encode()
