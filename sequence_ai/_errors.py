"""Every error the client raises.

    SequencesError              anything of ours; catching it never catches httpx's
    ├── AuthError               401: the key (gateway) or, after reconnects gave up, the direct secret
    ├── OutOfCredit             402: the prepaid balance is spent
    ├── InvalidRequest          any other 4xx, or a local refusal: deterministic, never retried
    │   ├── InvalidArgument         a value refused before anything is sent (also a ValueError)
    │   │   └── ObservationMismatch     views, state width or frame size differ from the model's row
    │   ├── InvalidArgumentType     an argument of the wrong type (also a TypeError)
    │   └── InvalidIndex            a row index outside the chunk (also an IndexError)
    ├── Unavailable             429 / 503 / 504 / network: .warming, .retry_after_s, .job_id
    ├── CertPinError            the worker's certificate does not match the pin: fatal, never retried
    └── ChunkExhausted          next_action() with an empty buffer and no observation

Other 5xx answers (500, 501, 502 ...) raise the base class itself.

The local refusals are also the builtin a Python caller expects (`except ValueError` keeps
working), and `status` is None on them: nothing was sent.
"""

from __future__ import annotations

from typing import Optional, Union

__all__ = [
    "AuthError",
    "CertPinError",
    "ChunkExhausted",
    "InvalidArgument",
    "InvalidArgumentType",
    "InvalidIndex",
    "InvalidRequest",
    "ObservationMismatch",
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


class InvalidArgument(InvalidRequest, ValueError):
    """A value the client refuses locally, before anything is sent or billed."""


class ObservationMismatch(InvalidArgument):
    """The observation does not match the model's catalogue row: a missing view, a state that
    does not split as `state_layout` says, a frame of the wrong aspect ratio or size."""


class InvalidArgumentType(InvalidRequest, TypeError):
    """An argument of the wrong type, refused locally before anything is sent."""


class InvalidIndex(InvalidRequest, IndexError):
    """A row index outside the chunk."""


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
