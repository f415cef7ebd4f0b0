"""Verification of trigger deliveries signed per Standard Webhooks (``webhook-id``,
``webhook-timestamp``, ``webhook-signature: v1,<base64>``; HMAC-SHA256 over
``<id>.<timestamp>.<body>`` with the trigger's ``whsec_`` secret)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from typing import Any, Callable, Mapping, Optional, Union

DEFAULT_TOLERANCE_S = 300


class WebhookVerificationError(Exception):
    """A delivery whose signature, timestamp or headers do not check out."""


def _header(headers: Any, name: str) -> Optional[str]:
    # Mappings (dict, http.client.HTTPMessage, email.message.Message) or anything with .get;
    # header names are case-insensitive.
    getter = getattr(headers, "get", None)
    if getter is not None:
        value = getter(name)
        if value is None and isinstance(headers, Mapping):
            for k, v in headers.items():
                if str(k).lower() == name:
                    value = v
                    break
        return None if value is None else str(value)
    return None


def verify_webhook(
    secret: str,
    headers: Any,
    body: Union[bytes, str],
    *,
    tolerance: float = DEFAULT_TOLERANCE_S,
    now: Union[None, float, Callable[[], float]] = None,
) -> Any:
    """Checks a delivery and returns its parsed JSON payload; raises
    :class:`WebhookVerificationError` otherwise.

    ``body`` must be the raw body exactly as received. ``now`` (epoch seconds, or a function
    returning them) replaces the clock in tests; timestamps more than ``tolerance`` seconds away
    from it are refused. Several space-separated signatures (during a secret rotation) are
    accepted when any ``v1`` one matches; signatures are compared in constant time.
    """
    if not secret:
        raise ValueError("secret is required")
    msg_id = _header(headers, "webhook-id")
    ts = _header(headers, "webhook-timestamp")
    sigs = _header(headers, "webhook-signature")
    if not msg_id or not ts or not sigs:
        raise WebhookVerificationError("Missing webhook-id, webhook-timestamp or webhook-signature header.")
    ts = ts.strip()
    if not ts.isdigit():
        raise WebhookVerificationError("webhook-timestamp is not a number of seconds.")
    current = now() if callable(now) else (time.time() if now is None else now)
    sent = int(ts)
    if sent < int(current) - tolerance:
        raise WebhookVerificationError("Message timestamp too old.")
    if sent > int(current) + tolerance:
        raise WebhookVerificationError("Message timestamp too new.")

    try:
        key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret, validate=True)
    except binascii.Error:
        raise ValueError("secret is not base64 (expected whsec_<base64>)") from None
    raw = body.encode() if isinstance(body, str) else bytes(body)
    expected = base64.b64encode(hmac.new(key, f"{msg_id}.{ts}.".encode() + raw, hashlib.sha256).digest())

    matched = False
    for part in sigs.split(" "):
        version, _, value = part.partition(",")
        if version != "v1" or not value:
            continue
        # Every candidate is compared (no early exit), each in constant time.
        if hmac.compare_digest(value.encode(), expected):
            matched = True
    if not matched:
        raise WebhookVerificationError("No matching signature found.")
    try:
        return json.loads(raw)
    except ValueError:
        raise WebhookVerificationError("Signature is valid but the body is not JSON.") from None
