"""One logical /act request as the caller gives it, what it cost, and its body on the wire."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional

from .._errors import SequencesError
from .._net._transport import compact_json

__all__ = ["Abandoned", "ActRequest", "ActTrace", "with_fields"]


class Abandoned(SequencesError):
    """The caller no longer wants this request's answer (interrupt); never reaches user code."""


@dataclass
class ActTrace:
    """What one logical act cost, filled in as it goes (read by telemetry and the estimator)."""

    rid: str = ""
    rtt_s: Optional[float] = None  # last worker attempt that got an answer
    overhead_s: float = 0.0  # admission, renewal, reconnect backoff: one-off, not service time
    reconnects: int = 0
    first_after_connect: bool = False
    rid_mismatch: bool = False


@dataclass
class ActRequest:
    """One logical /act as the caller gave it; every attempt sends the same request."""

    payload: Mapping[str, Any]
    encoded: Optional[bytes]
    rid: str
    episode_id: Optional[str]
    cancelled: Callable[[], bool]
    trace: ActTrace


def with_fields(payload: Mapping[str, Any], encoded: Optional[bytes], extra: Mapping[str, Any]) -> bytes:
    """The /act body on the wire: `payload` with `extra`'s keys set. When `encoded` (the payload
    as compact JSON) is given and no key is replaced, `extra` is appended to those bytes instead
    of encoding the frames again."""
    if encoded is None or any(key in payload for key in extra):
        return compact_json({**payload, **extra})
    if not extra:
        return encoded
    return encoded[:-1] + (b"," if payload else b"") + compact_json(extra)[1:]
