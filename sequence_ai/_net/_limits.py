"""Size limits: what the client sends, checked before anything is uploaded, and what it accepts
back, checked as it arrives.

The worker refuses `/act` bodies over 4 MiB with a 413 — after the client has paid for the
upload (on a robot's uplink, seconds per oversized frame). Measuring the body exactly as it goes
on the wire (compact JSON, UTF-8) refuses it here instead, naming the size and the limit.

Answers are capped on both HTTP paths (`_transport.py`): an upstream that sends a 400 MiB body, a
header block without end or a chunk-size line without end is cut off at these sizes instead of
being buffered whole. Each cap is far above anything the service sends.
"""

from __future__ import annotations

from typing import Any

from .._errors import InvalidRequest
from ._transport import compact_json

__all__ = ["ACT_BODY_LIMIT_BYTES", "GATEWAY_ANSWER_LIMIT_BYTES", "HEADER_BLOCK_LIMIT_BYTES", "INTERIM_ANSWERS_LIMIT",
           "LINE_LIMIT_BYTES", "WORKER_ANSWER_LIMIT_BYTES", "encode_within_limit"]

ACT_BODY_LIMIT_BYTES = 4 * 1024 * 1024  # the worker's limit (docs/PLATFORM.md)
WORKER_ANSWER_LIMIT_BYTES = 8 * 1024 * 1024  # an /act answer is a few KB
GATEWAY_ANSWER_LIMIT_BYTES = 64 * 1024 * 1024  # depth maps of several full-HD frames fit
HEADER_BLOCK_LIMIT_BYTES = 64 * 1024  # one answer's status line and headers (or a chunked answer's trailers)
LINE_LIMIT_BYTES = 4096  # one chunk-size line of a chunked answer
INTERIM_ANSWERS_LIMIT = 8  # `100 Continue` and friends before the real answer


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
