"""The node's /diagnostics statuses: the policy loop's (loop rate, refill latency, underruns,
late beats, input ages, and what would stop the next goal: a stale or malformed input, a worker not ready, the
e-stop). The e-stop's own status is estop/status.py."""

from __future__ import annotations

import collections
from typing import Optional, Sequence, Tuple

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

from .inputs.samples import LatestSample, input_problem

__all__ = ["TickRate", "policy_loop_status"]


class TickRate:
    """The control timer's measured rate over its latest ticks (monotonic seconds)."""

    def __init__(self, window: int = 64):
        self._times: collections.deque = collections.deque(maxlen=window)

    def tick(self, now_s: float) -> None:
        self._times.append(now_s)

    def hz(self) -> float:
        times = tuple(self._times)
        if len(times) <= 2 or times[-1] <= times[0]:
            return 0.0
        return (len(times) - 1) / (times[-1] - times[0])


def policy_loop_status(*, name: str, model_id: str, target_hz: float, measured_hz: float, running: bool,
                       ready: bool, progress, joint_states: LatestSample, cameras: Sequence[LatestSample],
                       joint_names: Sequence[str], gripper_joint: str, estop: Optional[str],
                       late_beats: Tuple[int, float] = (0, 0.0)) -> DiagnosticStatus:
    """One DiagnosticStatus: OK, WARN (stale or missing input, worker not ready) or ERROR
    (malformed input, e-stop engaged); `estop` names the engaged e-stop topic, else None;
    `late_beats`: the running (or latest) goal's late commands and how late in all (control/ticks.py)."""
    p = progress
    values = [
        KeyValue(key="control_hz_target", value=f"{target_hz:.2f}"),
        KeyValue(key="control_hz_measured", value=f"{measured_hz:.2f}"),
        KeyValue(key="running", value=str(running)),
        KeyValue(key="refill_latency_s", value="" if p.refill_latency_s is None else f"{p.refill_latency_s:.3f}"),
        KeyValue(key="underruns", value=str(p.underruns)),
        KeyValue(key="underrun_s", value=f"{p.underrun_s:.3f}"),
        KeyValue(key="late_beats", value=str(late_beats[0])),
        KeyValue(key="late_beat_s", value=f"{late_beats[1]:.3f}"),
    ]
    level, summary = DiagnosticStatus.OK, "ok"
    for sample in [joint_states, *cameras]:
        age = sample.age_s()
        values.append(KeyValue(key=f"age_s {sample.topic}", value="never" if age is None else f"{age:.3f}"))
        if age is None or age > sample.max_age_s:
            level, summary = DiagnosticStatus.WARN, f"{sample.topic} is stale or missing"
    if not ready:
        level, summary = DiagnosticStatus.WARN, "worker not ready"
    # A malformed input would end the next goal bad_input: say so before anyone sends one.
    problem = input_problem(joint_states, list(cameras), joint_names, gripper_joint)
    if problem is not None:
        values.append(KeyValue(key="bad_input", value=problem))
        level, summary = DiagnosticStatus.ERROR, f"bad input: {problem}"
    if estop is not None:
        values.append(KeyValue(key="estop", value=f"engaged on {estop}"))
        level, summary = DiagnosticStatus.ERROR, f"e-stop engaged on {estop}: goals are refused"
    return DiagnosticStatus(level=level, name=f"{name}: policy loop", message=summary, hardware_id=model_id,
                            values=values)
