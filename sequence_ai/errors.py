"""Every error the client raises, as `sequence_ai.errors` (the map is in `_errors.py`)."""

from . import _errors
from ._errors import *  # noqa: F403 -- exactly _errors.__all__

__all__ = list(_errors.__all__)
