"""Standard Webhooks signing: `v1,<base64 HMAC-SHA256 over "id.timestamp.body">` with the `whsec_` secret."""

from __future__ import annotations

import base64
import hashlib
import hmac

from .rows import Receiver, secret_key


def signature(secret: str, webhook_id: str, timestamp: int, body: str) -> str:
    signed = f"{webhook_id}.{timestamp}.{body}".encode()
    return "v1," + base64.b64encode(hmac.new(secret_key(secret), signed, hashlib.sha256).digest()).decode()


def signed_headers(endpoint: Receiver, webhook_id: str, timestamp: int, body: str) -> dict[str, str]:
    """The headers of one delivery: the three Standard Webhooks headers, JSON, and the configured auth header."""
    headers = {
        "content-type": "application/json",
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(endpoint.secret, webhook_id, timestamp, body),
    }
    if endpoint.auth_header is not None:
        headers[endpoint.auth_header[0]] = endpoint.auth_header[1]
    return headers
