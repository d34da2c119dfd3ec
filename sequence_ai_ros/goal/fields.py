"""What an Act goal must carry to be accepted: the checks on its own fields, made in the goal
callback so that a goal that could only fail is rejected at the door (the reason on
~/goal_refused) instead of being accepted and then aborting. The bounds are the client's own
(`run()` refuses the same as InvalidArgument), read from it."""

from __future__ import annotations

import math
from typing import Any, Optional

import sequence_ai

__all__ = ["goal_fields_problem"]


def goal_fields_problem(goal: Any) -> Optional[str]:
    """Why `goal`'s instruction or max_seconds cannot run, or None."""
    instruction, max_seconds = goal.instruction, goal.max_seconds
    if not instruction.strip():
        return "instruction is empty"
    if len(instruction) > sequence_ai.INSTRUCTION_LIMIT_CHARS:
        return (f"instruction is {len(instruction)} characters; the model's worker takes at most "
                f"{sequence_ai.INSTRUCTION_LIMIT_CHARS}")
    if not (max_seconds > 0 and math.isfinite(max_seconds)):
        return f"max_seconds must be > 0 (got {max_seconds})"
    if max_seconds > sequence_ai.MAX_RUN_SECONDS:
        return f"max_seconds must be at most {sequence_ai.MAX_RUN_SECONDS:g} (a day) (got {max_seconds:g})"
    return None
