"""Event arguments -> ROS 2 messages (as dicts), on the recorder's own thread.

Each builder returns a list of (topic, schema name, message, log time ns). The topics:

    /policy/run                          sequence_ai_record/RunStart     once, first
    /policy/camera/<view>/compressed     sensor_msgs/CompressedImage     the frames each request sent
    /policy/joint_states                 sensor_msgs/JointState          the joints each request sent
    /policy/instruction                  std_msgs/String                 each set_instruction
    /policy/request                      sequence_ai_record/Request      each /act request, when sent
    /policy/chunk                        sequence_ai_record/ActionChunk  each answer, when it arrived
    /policy/command                      sequence_ai_record/Command      each action handed to the robot
    /policy/hold                         sequence_ai_record/Hold         each hold
    /policy/arm_command                  sensor_msgs/JointState          each command the ROS node published
    /policy/feedback                     sequence_ai_record/Progress     progress snapshots
    /policy/outcome                      sequence_ai_record/RunOutcome   once, last
"""

from __future__ import annotations

import base64
import math
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .._version import __version__

__all__ = ["FRESHNESS", "TOPICS"]

Built = List[Tuple[str, str, Dict[str, Any], int]]

TOPICS = {
    "run": "/policy/run", "joints": "/policy/joint_states", "instruction": "/policy/instruction",
    "request": "/policy/request", "chunk": "/policy/chunk", "command": "/policy/command", "hold": "/policy/hold",
    "feedback": "/policy/feedback", "outcome": "/policy/outcome", "arm": "/policy/arm_command",
}
CAMERA_PREFIX = "/policy/camera/"
_NOT_A_NAME = re.compile(r"[^A-Za-z0-9_]")


def camera_topic(view: str) -> str:
    """A ROS-legal topic for a camera view name (anything else becomes `_`)."""
    name = _NOT_A_NAME.sub("_", view or "camera")
    return f"{CAMERA_PREFIX}{'v' + name if name[0].isdigit() else name}/compressed"


def field_of(value: Any, name: str) -> Any:
    """`name` of a wire-form mapping or of the client's dataclass (Observation, ImageFrame, ...)."""
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def header(log_ns: int, frame_id: str = "") -> Dict[str, Any]:
    return {"stamp": time_msg(log_ns), "frame_id": frame_id}


def time_msg(ns: int) -> Dict[str, int]:
    return {"sec": ns // 1_000_000_000, "nanosec": ns % 1_000_000_000}


def _nan(value: Optional[float]) -> float:
    return math.nan if value is None else float(value)


def known(value: Any) -> Optional[float]:
    """A measured number as a float, or None where there is none (None, NaN: not known)."""
    return None if value is None or value != value else float(value)


def run_started(log_ns: int, model: str, episode_id: str, control_hz: Optional[float], joint_names: Sequence[str],
                views: Sequence[str], extra_json: str) -> Built:
    message = {"header": header(log_ns), "model": model, "episode_id": episode_id, "control_hz": _nan(control_hz),
               "client_version": __version__, "joint_names": list(joint_names), "camera_views": list(views),
               "extra_json": extra_json}
    return [(TOPICS["run"], "sequence_ai_record/RunStart", message, log_ns)]


def instruction(log_ns: int, text: str) -> Built:
    return [(TOPICS["instruction"], "std_msgs/String", {"data": text}, log_ns)]


def _image_bytes(data: Any) -> bytes:
    return bytes(data) if isinstance(data, (bytes, bytearray, memoryview)) else base64.b64decode(data)


def image_format(data: bytes) -> str:
    if data[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    return ""


def frames(log_ns: int, images: Sequence[Mapping[str, Any]]) -> Built:
    built: Built = []
    for frame in images:
        data = _image_bytes(field_of(frame, "data") or b"")
        taken_ms = field_of(frame, "timestamp_ms")
        stamp_ns = int(taken_ms) * 1_000_000 if isinstance(taken_ms, (int, float)) and taken_ms > 0 else log_ns
        view = str(field_of(frame, "view") or "")
        message = {"header": header(stamp_ns, view), "format": image_format(data), "data": data}
        built.append((camera_topic(view), "sensor_msgs/CompressedImage", message, log_ns))
    return built


def joint_state(log_ns: int, proprioception: Any, joint_names: Sequence[str]) -> Built:
    """JointState.position = joint_positions then the gripper values; names from run_started
    when they match in number, else joint_1.. and gripper_1.."""
    joints = [float(v) for v in field_of(proprioception, "joint_positions") or ()]
    gripper = [float(v) for v in field_of(proprioception, "gripper") or ()]
    names = list(joint_names)
    if len(names) != len(joints) + len(gripper):
        names = [f"joint_{i + 1}" for i in range(len(joints))] + [f"gripper_{i + 1}" for i in range(len(gripper))]
    velocities = field_of(proprioception, "joint_velocities")
    message = {"header": header(log_ns), "name": names, "position": joints + gripper,
               "velocity": [float(v) for v in velocities] if velocities else [], "effort": []}
    return [(TOPICS["joints"], "sensor_msgs/JointState", message, log_ns)]


def arm_command(log_ns: int, names: Sequence[str], values: Sequence[float], velocity: bool) -> Built:
    """What went out on the robot's command topic, in joint units: positions, or velocities."""
    values = [float(v) for v in values]
    message = {"header": header(log_ns), "name": list(names), "position": [] if velocity else values,
               "velocity": values if velocity else [], "effort": []}
    return [(TOPICS["arm"], "sensor_msgs/JointState", message, log_ns)]


def request(log_ns: int, rid: str, text: str, episode_id: str, actions_at_submit: int, views: Sequence[str]) -> Built:
    message = {"header": header(log_ns), "rid": rid, "instruction": text, "episode_id": episode_id,
               "actions_at_submit": int(actions_at_submit), "views": list(views)}
    return [(TOPICS["request"], "sequence_ai_record/Request", message, log_ns)]


def answer(log_ns: int, sent_ns: int, rid: str, steps: Sequence[Sequence[float]], latency_s: float,
           action_space: str, control_hz: float, first_row: int, installed: int, warnings: Sequence[str],
           error: str) -> Built:
    rows = len(steps)
    width = len(steps[0]) if rows else 0
    layout = {"dim": [{"label": "rows", "size": rows, "stride": rows * width},
                      {"label": "action_dim", "size": width, "stride": width}], "data_offset": 0}
    message = {"header": header(log_ns), "rid": rid, "sent": time_msg(sent_ns), "latency_s": float(latency_s),
               "action_space": action_space or "", "control_frequency_hz": _nan(control_hz),
               "steps": {"layout": layout, "data": [float(v) for row in steps for v in row]},
               "first_row": int(first_row), "rows_installed": max(0, int(installed)), "warnings": list(warnings),
               "error": error}
    return [(TOPICS["chunk"], "sequence_ai_record/ActionChunk", message, log_ns)]


def command(log_ns: int, row: Sequence[float], rid: str, row_index: int, action_index: int,
            age_s: Optional[float] = None, lateness_s: Optional[float] = None) -> Built:
    message = {"header": header(log_ns), "rid": rid, "row_index": int(row_index), "action_index": action_index,
               "values": [float(v) for v in row], "age_s": _nan(age_s), "lateness_s": _nan(lateness_s)}
    return [(TOPICS["command"], "sequence_ai_record/Command", message, log_ns)]


def hold(log_ns: int, reason: str, actions: int) -> Built:
    return [(TOPICS["hold"], "sequence_ai_record/Hold", {"header": header(log_ns), "reason": reason,
                                                         "actions": actions}, log_ns)]


# How fresh the played actions were (RunOutcome and RunProgress): age = played_at - observed_at,
# lateness = played_at - the moment the row was computed for.
FRESHNESS = ("age_p50_s", "age_max_s", "lateness_p50_s", "lateness_max_s")
_PROGRESS = ("running", "actions", "chunks", "buffered", "elapsed_s", "underruns", "underrun_s", "instruction",
             "warming", "warming_waited_s", "warming_eta_s", "refill_latency_s", *FRESHNESS)


def progress_fields(progress: Any) -> Dict[str, Any]:
    """A snapshot taken now, on the caller's thread (the object may change after)."""
    return {name: getattr(progress, name, None) for name in _PROGRESS}


def progress(log_ns: int, fields: Mapping[str, Any]) -> Built:
    message: Dict[str, Any] = {"header": header(log_ns)}
    for name in _PROGRESS:
        value = fields.get(name)
        if name in ("running", "warming"):
            message[name] = bool(value)
        elif name == "instruction":
            message[name] = value or ""
        elif name.endswith("_s"):
            message[name] = _nan(value)
        else:
            message[name] = int(value or 0)
    return [(TOPICS["feedback"], "sequence_ai_record/Progress", message, log_ns)]


_OUTCOME = ("reason", "actions", "chunks", "elapsed_s", "underruns", "underrun_s", "episode_resets", "max_seam_jump",
            "action_space", "instruction_swaps", "max_instruction_lag_s", "observe_s", *FRESHNESS)


def outcome_fields(outcome: Any, message: str, held: Optional[bool], final_instruction: Optional[str],
                   frames_recorded: int, frames_dropped: int) -> Dict[str, Any]:
    """A sequence_ai.RunOutcome, or the node's RunOutcome message (which has message, held and
    final_instruction of its own), as the fields of our RunOutcome, in its order."""
    fields = {name: getattr(outcome, name, None) for name in _OUTCOME}
    fields["reason"] = str(fields["reason"] or "")
    held = getattr(outcome, "held", None) if held is None else held
    final_instruction = getattr(outcome, "final_instruction", None) if final_instruction is None else final_instruction
    fields.update(stopped_early=fields["reason"] != "completed", message=message or getattr(outcome, "message", ""),
                  held=fields["reason"] != "completed" if held is None else held,
                  final_instruction=final_instruction or "", frames_recorded=frames_recorded,
                  frames_dropped=frames_dropped)
    return fields


def outcome(log_ns: int, fields: Mapping[str, Any]) -> Built:
    message: Dict[str, Any] = {"header": header(log_ns)}
    for name, value in fields.items():
        if name in ("reason", "message", "action_space", "final_instruction"):
            message[name] = value or ""
        elif name in ("stopped_early", "held"):
            message[name] = bool(value)
        elif name.endswith("_s") or name == "max_seam_jump":
            message[name] = _nan(value)
        else:
            message[name] = int(value or 0)
    return [(TOPICS["outcome"], "sequence_ai_record/RunOutcome", message, log_ns)]
