"""How a run's ending becomes a RunOutcome message and one terminal goal state.

    completed / until / timeout          -> succeeded
    interrupted / canceled               -> canceled
    anything else (validate, stale_input, bad_input,
    shutdown, raised:<Class>)            -> aborted, with the reason
"""

from __future__ import annotations

import math
from typing import Any, Optional, Tuple

from sequence_ai_ros.action import Act
from sequence_ai_ros.msg import RunOutcome

__all__ = ["ABORTED", "CANCELED", "SUCCEEDED", "outcome_message", "status_for"]

SUCCEEDED, CANCELED, ABORTED = "succeeded", "canceled", "aborted"

_BY_REASON = {
    "completed": (Act.Result.STATUS_COMPLETED, SUCCEEDED),
    "until": (Act.Result.STATUS_UNTIL, SUCCEEDED),
    "timeout": (Act.Result.STATUS_TIMEOUT, SUCCEEDED),
    "interrupted": (Act.Result.STATUS_INTERRUPTED, CANCELED),
    "canceled": (Act.Result.STATUS_CANCELED, CANCELED),
    "validate": (Act.Result.STATUS_UNSAFE_ACTION, ABORTED),
    "stale_input": (Act.Result.STATUS_STALE_INPUT, ABORTED),
    "bad_input": (Act.Result.STATUS_STALE_INPUT, ABORTED),
    "shutdown": (Act.Result.STATUS_SHUTDOWN, ABORTED),
    "rejected": (Act.Result.STATUS_REJECTED, ABORTED),
}


def status_for(reason: str) -> Tuple[int, str]:
    """(Act.Result status code, terminal state) for a reason."""
    return _BY_REASON.get(reason, (Act.Result.STATUS_POLICY_ERROR, ABORTED))


def _nan_if_none(value: Optional[float]) -> float:
    return math.nan if value is None else float(value)


def outcome_message(
    outcome: Any,
    *,
    reason: str,
    message: str,
    model: str,
    instruction: str,
    held: bool,
    stamp: Any,
) -> RunOutcome:
    """A RunOutcome message from a sequence_ai.RunOutcome (or None when the run never started)."""
    msg = RunOutcome(
        stamp=stamp,
        reason=reason,
        stopped_early=reason != "completed",
        message=message,
        held=held,
        model=model,
        final_instruction=instruction or "",
        max_instruction_lag_s=math.nan,
        max_seam_jump=math.nan,
    )
    if outcome is not None:
        msg.actions = int(outcome.actions)
        msg.chunks = int(outcome.chunks)
        msg.elapsed_s = float(outcome.elapsed_s)
        msg.underruns = int(outcome.underruns)
        msg.underrun_s = float(outcome.underrun_s)
        msg.episode_resets = int(outcome.episode_resets)
        msg.instruction_swaps = int(outcome.instruction_swaps)
        msg.max_instruction_lag_s = _nan_if_none(outcome.max_instruction_lag_s)
        msg.max_seam_jump = _nan_if_none(outcome.max_seam_jump)
        msg.observe_s = float(outcome.observe_s)
        msg.action_space = outcome.action_space or ""
    return msg
