"""Every error the client raises, as `sequence_ai.errors` (the map is in `_errors.py`)."""

from ._errors import (
    AuthError,
    CertPinError,
    ChunkExhausted,
    InvalidArgument,
    InvalidArgumentType,
    InvalidIndex,
    InvalidRequest,
    ObservationMismatch,
    OutOfCredit,
    SequencesError,
    Unavailable,
)

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
