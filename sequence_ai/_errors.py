"""Every error the client raises.

    SequencesError              anything of ours; catching it never catches httpx's
    ├── AuthError               401: the key (gateway) or, after reconnects gave up, the direct secret
    ├── OutOfCredit             402: the prepaid balance is spent
    ├── InvalidRequest          any other 4xx, or a local refusal: deterministic, never retried
    ├── Unavailable             429 / 503 / 504 / network: .warming, .retry_after_s, .job_id
    ├── CertPinError            the worker's certificate does not match the pin: fatal, never retried
    └── ChunkExhausted          next_action() with an empty buffer and no observation

Other 5xx answers (500, 501, 502 ...) raise the base class itself.
"""

from __future__ import annotations

from typing import Optional, Union

__all__ = [
    "AuthError",
    "CertPinError",
    "ChunkExhausted",
    "InvalidRequest",
    "OutOfCredit",
    "SequencesError",
    "Unavailable",
]


class SequencesError(Exception):
    """Base of every error the client raises. `status` is the HTTP status (None if local),
    `body` the raw response text (never a request, so never a secret)."""

    def __init__(self, message: str, status: Optional[int] = None, body: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = body


class AuthError(SequencesError):
    """The key is missing or rejected (401)."""


class OutOfCredit(SequencesError):
    """The account's prepaid balance is spent (402)."""


class InvalidRequest(SequencesError):
    """The request is wrong and retrying it will not help (4xx other than 401/402/429)."""


class Unavailable(SequencesError):
    """The service cannot answer now. `warming=True` means a worker is loading: retry after
    `retry_after_s`. `warming=False` means busy (429) or an upstream failure."""

    def __init__(
        self,
        message: str,
        status: Optional[int] = None,
        body: Optional[str] = None,
        *,
        retry_after_s: Optional[Union[int, float]] = None,
        warming: bool = False,
        job_id: Optional[str] = None,
    ):
        super().__init__(message, status, body)
        self.retry_after_s = retry_after_s
        self.warming = warming
        self.job_id = job_id


class CertPinError(SequencesError):
    """The worker's TLS certificate is missing or does not match the pinned fingerprint."""


class ChunkExhausted(SequencesError):
    """next_action() found the buffer empty and was given no observation to refill it from."""
