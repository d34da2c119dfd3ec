"""How long the worker connection waits before its next attempt (WIRE.md §6.5, §6.6)."""

from __future__ import annotations

from typing import Optional

__all__ = ["busy_wait_s", "reconnect_backoff_s"]


def reconnect_backoff_s(attempt: int) -> float:
    """0.1, 0.2, 0.4, 0.8, 1.6 s, capped at 2 s (§6.5)."""
    return min(2.0, 0.1 * 2 ** (attempt - 1))


def busy_wait_s(consecutive: int, retry_after_s: Optional[float], jitter: float) -> float:
    """Jittered exponential wait after the n-th 429 in a row, capped at Retry-After (§6.6).
    `jitter` is a uniform draw in [0.5, 1.0]."""
    cap = retry_after_s if retry_after_s and retry_after_s > 0 else 1.0
    return jitter * min(cap, 0.05 * 2 ** min(consecutive - 1, 10))
