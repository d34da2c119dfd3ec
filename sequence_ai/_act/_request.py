"""What goes on the wire for one observation (docs/PROTOCOL.md §5.1, §7.2, §7.3, §7.11).

Applies the model's catalogue check to the observation at send time — warn, strict or off (the
check itself runs once per observation: `_vision._observation.checked`) — trims frames the model
would ignore, puts the instruction in force on it, and builds the /act body. Runs on the driving
thread, before anything is sent.
"""

from __future__ import annotations

import dataclasses
import random
import warnings
from typing import Any, Dict, Mapping, Optional, Tuple

from .._errors import InvalidArgument, InvalidArgumentType, ObservationMismatch
from .._net._limits import encode_within_limit
from .._vision._observation import checked, trim_frames
from .._wire import Model, Observation

__all__ = ["VALIDATE_MODES", "ObservationCheck", "act_body", "in_force", "new_rid", "observation_wire"]

VALIDATE_MODES = ("warn", "strict", "off")


def new_rid() -> str:
    """A correlation id for one logical act: `r-` + 8 lower-case hex. Not a secret, so the
    module-level PRNG (seeded from the OS, reseeded in a forked child) rather than a system call
    per request."""
    return f"r-{random.getrandbits(32):08x}"


def in_force(observation: Any, instruction: Optional[str]) -> Tuple[Any, Optional[str]]:
    """The observation to send with `instruction` on it (the one set on the Policy, docs/PROTOCOL.md §7.11),
    and the instruction it carries: `instruction`, or when none is set, the observation's own."""
    if instruction is not None:
        if isinstance(observation, Observation):
            return dataclasses.replace(observation, instruction=instruction), instruction
        if isinstance(observation, Mapping):
            return {**observation, "instruction": instruction}, instruction
        raise InvalidArgumentType(f"observe() must return an Observation, not {type(observation).__name__}")
    own = observation.get("instruction") if isinstance(observation, Mapping) else getattr(observation, "instruction", None)
    return observation, own if isinstance(own, str) else None


def observation_wire(observation: Any) -> Dict[str, Any]:
    if isinstance(observation, Observation):
        return observation.to_wire()
    if isinstance(observation, Mapping):
        return dict(observation)
    raise InvalidArgumentType(f"an observation must be an Observation, not {type(observation).__name__}")


class ObservationCheck:
    """The send-time check of §7.2 for one Policy. `row` is the model's catalogue row, or None
    when it is unknown (then nothing is checked or trimmed)."""

    def __init__(self, mode: str):
        if mode not in VALIDATE_MODES:
            raise InvalidArgument(f"validate must be one of {', '.join(VALIDATE_MODES)}, not {mode!r}")
        self.mode = mode
        self._warned_trim = False

    def apply(self, row: Optional[Model], observation: Any) -> Any:
        """The observation to send (maybe trimmed); warns or raises ObservationMismatch (an
        InvalidRequest) on problems."""
        if self.mode == "off" or row is None or not isinstance(observation, Observation):
            return observation
        verdict = checked(row, observation)
        if verdict.problems:
            message = verdict.message(row)
            if self.mode == "strict":
                raise ObservationMismatch(message)
            warnings.warn(message, UserWarning, stacklevel=4)
        trimmed, dropped = trim_frames(row, observation)
        if dropped and not self._warned_trim:
            self._warned_trim = True
            warnings.warn(f"{row.short_id} reads {row.context_frames} frame(s) per view; older frames were dropped",
                          UserWarning, stacklevel=4)
        return trimmed


def act_body(model: str, observation: Any, *, seed: Optional[int],
             options: Mapping[str, Any]) -> Tuple[Dict[str, Any], bytes]:
    """The /act body and its bytes on the wire; options whose value is None are dropped (the
    embodiment and episode are added by the worker connection, to the bytes). A body over the
    worker's size limit is InvalidRequest here, before anything is sent. Encoded once, here: the
    size check needs the bytes, and the frames are most of them."""
    body: Dict[str, Any] = {"model": model, "observation": observation_wire(observation)}
    extra = {"seed": seed, **options}
    body.update({k: v for k, v in extra.items() if v is not None})
    return body, encode_within_limit(body)  # refused here, before a byte is uploaded
