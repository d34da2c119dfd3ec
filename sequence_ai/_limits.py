"""Size limits checked before anything is uploaded.

The worker refuses `/act` bodies over 4 MiB with a 413 — after the client has paid for the
upload (on a robot's uplink, seconds per oversized frame). Measuring the body exactly as it goes
on the wire (compact JSON, UTF-8) refuses it here instead, naming the size and the limit.
"""

from __future__ import annotations

from typing import Any

from ._errors import InvalidRequest
from ._http11 import compact_json

__all__ = ["ACT_BODY_LIMIT_BYTES", "encode_within_limit"]

ACT_BODY_LIMIT_BYTES = 4 * 1024 * 1024  # the worker's limit (docs/PLATFORM.md)


def encode_within_limit(body: Any, limit_bytes: int = ACT_BODY_LIMIT_BYTES, what: str = "/act request") -> bytes:
    """The body as it goes on the wire, or InvalidRequest when it cannot be sent as JSON or
    exceeds `limit_bytes`."""
    try:
        encoded = compact_json(body)
    except ValueError as exc:  # NaN/inf in the observation: httpx would refuse it too, less clearly
        raise InvalidRequest(f"{what} cannot be sent as JSON: {exc}") from None
    size = len(encoded)
    if size > limit_bytes:
        raise InvalidRequest(
            f"{what} is {size / 1048576:.1f} MiB ({size} bytes), above the worker's limit of "
            f"{limit_bytes / 1048576:g} MiB ({limit_bytes} bytes); send smaller or fewer frames "
            "(encode() resizes to the model's client_resize)"
        )
    return encoded
