"""The instruction latch (docs/PROTOCOL.md §7.11): set from any thread, applied to the next request.

An instruction longer than the worker takes (its /act contract: 4096 characters; no catalogue row
carries a limit) is refused here, as InvalidArgument, before it is in force: sent, it would end the
run with the worker's 422 at the next request."""

from __future__ import annotations

import threading
import time
from typing import Optional, Tuple

from .._errors import InvalidArgument, InvalidArgumentType

__all__ = ["INSTRUCTION_LIMIT_CHARS", "InstructionLatch", "check_instruction"]

INSTRUCTION_LIMIT_CHARS = 4096


def check_instruction(instruction: object) -> None:
    """InvalidArgumentType for a non-str, InvalidArgument for one over INSTRUCTION_LIMIT_CHARS."""
    if not isinstance(instruction, str):
        raise InvalidArgumentType(f"instruction must be a str, not {type(instruction).__name__}")
    if len(instruction) > INSTRUCTION_LIMIT_CHARS:
        raise InvalidArgument(f"instruction is {len(instruction)} characters; the worker takes at most "
                              f"{INSTRUCTION_LIMIT_CHARS}")


class InstructionLatch:
    """Holds the instruction in force. `set()` returns at once; `consume()` (driving thread)
    reports whether a new sentence is being applied and how long it waited."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._value: Optional[str] = None
        self._pending_since: Optional[float] = None

    @property
    def value(self) -> Optional[str]:
        with self._lock:
            return self._value

    def set(self, instruction: str) -> bool:
        check_instruction(instruction)
        with self._lock:
            if instruction == self._value:
                return False
            self._value = instruction
            self._pending_since = time.monotonic()
            return True

    def seed(self, instruction: str) -> None:
        """Put `instruction` in force without counting it as a swap (run(instruction=...))."""
        check_instruction(instruction)
        with self._lock:
            self._value = instruction
            self._pending_since = None

    def clear(self) -> None:
        with self._lock:
            self._value = None
            self._pending_since = None

    def consume(self) -> Tuple[Optional[str], Optional[float]]:
        """(instruction in force, when the sentence being applied now was set, or None). The lag
        is measured by the caller, up to the first action computed with it (docs/PROTOCOL.md §7.11 counts
        it at the observation; the guide's bound is about the action)."""
        with self._lock:
            since, self._pending_since = self._pending_since, None
            return self._value, since
