"""How a run's ending becomes a RunOutcome message and one terminal goal state (`GoalEnding`).

    completed / until / timeout          -> succeeded
    canceled (the goal's client asked)   -> canceled
    anything else (interrupted, validate, stale_input,
    bad_input, estop, shutdown, raised:<Class>) -> aborted, with the reason

An interrupted goal (~/interrupt, a preempting goal) ends aborted: rclpy's goal handle enters the
CANCELING state, the only one `canceled()` leaves from, only on a cancel request from the goal's
client, and ROS calls a goal the server ended without one aborted. Its result's status,
STATUS_INTERRUPTED, says what happened.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Optional, Tuple

from sequence_ai_ros.action import Act
from sequence_ai_ros.msg import RunOutcome

from ..inputs.samples import BadInput, StaleInput
from .slot import GoalRun, RunStopped

__all__ = ["ABORTED", "CANCELED", "SUCCEEDED", "GoalEnding", "as_reported", "end_goal", "ending_in_words", "ending_of",
           "feedback_message", "late_words", "outcome_message", "send_feedback", "status_for"]

SUCCEEDED, CANCELED, ABORTED = "succeeded", "canceled", "aborted"

_BY_REASON = {
    "completed": (Act.Result.STATUS_COMPLETED, SUCCEEDED),
    "until": (Act.Result.STATUS_UNTIL, SUCCEEDED),
    "timeout": (Act.Result.STATUS_TIMEOUT, SUCCEEDED),
    "interrupted": (Act.Result.STATUS_INTERRUPTED, ABORTED),
    "canceled": (Act.Result.STATUS_CANCELED, CANCELED),
    "validate": (Act.Result.STATUS_UNSAFE_ACTION, ABORTED),
    "stale_input": (Act.Result.STATUS_STALE_INPUT, ABORTED),
    "bad_input": (Act.Result.STATUS_STALE_INPUT, ABORTED),
    "estop": (Act.Result.STATUS_ESTOP, ABORTED),
    "shutdown": (Act.Result.STATUS_SHUTDOWN, ABORTED),
    "rejected": (Act.Result.STATUS_REJECTED, ABORTED),
}


def ending_in_words(reason: str, goal: Any, actions: Optional[int]) -> str:
    """What ended the run, said as a sentence a planner's operator reads first. `stopped_early` keeps
    the 0.20.0 client's meaning (true for every ending but `completed`), so a time-bounded goal that
    ran its full max_seconds reads `timeout, stopped_early: true`; this says it ended normally."""
    max_seconds = float(getattr(goal, "max_seconds", 0.0) or 0.0)
    max_actions = int(getattr(goal, "max_actions", 0) or 0)
    played = "" if actions is None else f" ({actions} actions)"
    if reason == "timeout":
        return f"ran its full max_seconds, {max_seconds:g} s{played}: the normal end of a time-bounded goal"
    if reason == "completed":
        return f"played its max_actions, {max_actions}: the normal end of a goal bounded by actions"
    if reason.startswith("raised:"):
        return f"the policy call failed ({reason[len('raised:'):]}){played}"
    words = {
        "until": "the until topic said the task is done", "interrupted": "stopped by ~/interrupt or a preempting goal",
        "canceled": "canceled by the goal's client", "validate": "a command failed the safety check before it was sent",
        "stale_input": "an input went stale", "bad_input": "an input was malformed", "estop": "the e-stop was pressed",
        "shutdown": "the node shut down", "rejected": "refused before anything moved",
    }
    return words.get(reason, reason) + played


def late_words(count: int, seconds: float) -> str:
    """The node's late beats said for an operator: not the policy's doing, the machine's."""
    return (f"{count} command{'s' if count != 1 else ''} went out late ({seconds:.2f} s in all): the node's "
            f"threads did not run in time (a loaded machine), the control periods between were skipped")


def status_for(reason: str) -> Tuple[int, str]:
    """(Act.Result status code, terminal state) for a reason."""
    return _BY_REASON.get(reason, (Act.Result.STATUS_POLICY_ERROR, ABORTED))


def ending_of(exc: BaseException) -> Tuple[str, str]:
    """(reason, message) of a run that raised `exc`; a stop the node decided reads `interrupted`
    here, the run's own stop reason replaces it."""
    if isinstance(exc, RunStopped):
        return "interrupted", ""
    if isinstance(exc, StaleInput):
        return "stale_input", str(exc)
    if isinstance(exc, BadInput):
        return "bad_input", str(exc)
    return f"raised:{type(exc).__name__}", str(exc)  # str, not repr: no request bytes


def end_goal(goal_handle: Any, terminal: str) -> None:
    """Put the goal in its one terminal state, through the goal handle's public calls (each valid
    from EXECUTING, and from CANCELING once a cancel request was accepted)."""
    if terminal == SUCCEEDED:
        goal_handle.succeed()
    elif terminal == CANCELED and goal_handle.is_cancel_requested:
        goal_handle.canceled()
    else:
        goal_handle.abort()


def as_reported(outcome: Any, *, reason: str, elapsed_s: Optional[float]) -> Any:
    """The client's RunOutcome as the node reports it: the node's reason (a stop the node decided,
    e.g. shutdown, where the client saw an interrupt) and, under sim time, the run's length in ROS
    time (`elapsed_s`)."""
    changes: dict = {"reason": reason} if reason else {}
    if elapsed_s is not None:
        changes["elapsed_s"] = elapsed_s
    return dataclasses.replace(outcome, **changes) if changes else outcome


def feedback_message(progress: Any, *, started: bool, instruction: str, elapsed_s: Optional[float]) -> Act.Feedback:
    """Act feedback from the client's progress. Until the run took its first observation the
    progress is not this goal's yet: zeros and the goal's instruction; the instruction stays the
    goal's until the first action (no request of this run has carried one before)."""
    p = progress
    feedback = Act.Feedback(instruction=instruction, warming=bool(p.warming),
                            warming_eta_s=_nan_if_none(p.warming_eta_s), **_freshness(None))
    if started:
        _set(feedback, _freshness(p))
        feedback.actions, feedback.chunks, feedback.buffered = int(p.actions), int(p.chunks), int(p.buffered)
        feedback.elapsed_s = float(p.elapsed_s if elapsed_s is None else elapsed_s)
        feedback.underruns = int(p.underruns)
        if p.actions > 0 and p.instruction:
            feedback.instruction = p.instruction
    return feedback


def send_feedback(run: GoalRun, progress: Any, elapsed_s: Optional[float]) -> None:
    """One Act feedback of `run`, and into its recording while it runs (nothing after the outcome)."""
    feedback = feedback_message(progress, started=run.started, instruction=run.goal_instruction, elapsed_s=elapsed_s)
    if run.recorder is not None and run.started and not run.held.is_set():
        run.recorder.feedback(progress)
    try:
        run.goal_handle.publish_feedback(feedback)
    except Exception:
        pass


def _nan_if_none(value: Optional[float]) -> float:
    return math.nan if value is None else float(value)


FRESHNESS = ("age_p50_s", "age_max_s", "lateness_p50_s", "lateness_max_s")


def _freshness(figures: Any) -> dict:
    """The age and lateness of the actions played (a client RunOutcome or RunProgress), NaN where
    unknown (no action played yet, or none said when it was computed for)."""
    if figures is None:
        return dict.fromkeys(FRESHNESS, math.nan)
    return {"age_p50_s": _nan_if_none(figures.age_p50_s), "age_max_s": _nan_if_none(figures.age_max_s),
            "lateness_p50_s": _nan_if_none(figures.lateness_p50_s),
            "lateness_max_s": _nan_if_none(figures.lateness_max_s)}


def _set(msg: Any, fields: dict) -> None:
    for name, value in fields.items():
        setattr(msg, name, value)


def outcome_message(
    outcome: Any,
    *,
    reason: str,
    message: str,
    model: str,
    instruction: str,
    held: bool,
    stamp: Any,
    late_beats: Tuple[int, float] = (0, 0.0),
) -> RunOutcome:
    """A RunOutcome message from a sequence_ai.RunOutcome (or None when the run never started), with
    the node's own late beats (control/ticks.py: count, seconds)."""
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
        late_beats=int(late_beats[0]),
        late_beat_s=float(late_beats[1]),
        **_freshness(None),
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
        _set(msg, _freshness(outcome))
        msg.recording_frames_dropped = int(getattr(outcome, "recording_frames_dropped", 0))
        msg.recording_error = str(getattr(outcome, "recording_error", "") or "")
    return msg


class GoalEnding:
    """Ends a goal, once: its RunOutcome message (described in its recording, published unless the
    goal was rejected), one log line, its terminal state and its result."""

    def __init__(self, model_id: str, outcome_pub: Any, recordings: Any, stamp: Callable[[], Any], logger: Any):
        self._model_id = model_id
        self._outcome_pub = outcome_pub
        self._recordings = recordings  # goal/recording.py's GoalRecordings, None without record_dir
        self._stamp = stamp
        self._logger = logger

    def finish(self, goal_handle: Any, outcome: Any, reason: str, message: str, *, held: bool, instruction: str,
               recorder: Any = None, stop_reason: Optional[str] = None, elapsed_s: Optional[float] = None,
               late_beats: Tuple[int, float] = (0, 0.0)) -> Act.Result:
        """`outcome` is the client's (None if the run never made one); a stop the node decided
        (`stop_reason`) replaces the client's `interrupted`; `elapsed_s`: the run's length in ROS time
        under sim time (as_reported); `late_beats`: the node's own late commands (control/ticks.py)."""
        if reason == "interrupted" and stop_reason:
            reason = stop_reason
        if outcome is not None:
            outcome = as_reported(outcome, reason=reason, elapsed_s=elapsed_s)
        if not message:  # the node has no words of its own for this ending: say what ended it first
            said = ending_in_words(reason, getattr(goal_handle, "request", None),
                                   None if outcome is None else outcome.actions)
            message = said if outcome is None else f"{said}. {outcome}"
            if late_beats[0]:
                message += f"; {late_words(*late_beats)}"
        msg = outcome_message(outcome, reason=reason, message=message, model=self._model_id,
                              instruction=instruction, held=held, stamp=self._stamp(), late_beats=late_beats)
        if recorder is not None:
            self._recordings.describe(msg, recorder)
        if reason != "rejected":
            self._outcome_pub.publish(msg)
        if recorder is not None:
            self._recordings.finish(recorder, msg)  # the file is finished off this thread
        status, terminal = status_for(reason)
        text = f"run ended: {reason}: {message}"
        # rclpy refuses two severities from one call site, hence two calls.
        if terminal == SUCCEEDED:
            self._logger.info(text)
        else:
            self._logger.warning(text)
        end_goal(goal_handle, terminal)
        return Act.Result(status=status, message=message or reason, outcome=msg)
