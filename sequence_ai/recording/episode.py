"""A recorded run as a training episode: one step per action the robot played.

    episode = episode_of(read_run(path, frames=True), fps=None, views=None)

The rule (docs/RECORDING.md, "From runs to a training set"):

- Step k is the k-th action handed to the robot (`/policy/command`). The loop plays one action per
  tick of the control clock, so the steps run at the model's control frequency; a tick that played
  nothing (an underrun: the arm held) is no step, nor is the hold at the end.
- `action` is the row as played, in the model's action space. `joint_command` is what the ROS node
  published for it (`/policy/arm_command`): the command closest in time to the action, between the
  actions before and after it (the node publishes each action the moment it plays it; its holds
  fall outside).
- `state` and the frames are the latest the model was sent at or before the step: the model sees
  the robot only when it asks for a chunk, so they repeat until the next request.
- `task` is the instruction in force at the step: the latest one set at or before it.
- At another fps F, frame j (time j/F) is the latest step at or before it: step floor(j * hz / F)
  on the steps' own clock, so a lower fps drops steps evenly and a higher one repeats them.
- A joint has one name: the published command's gripper joint (the node's `gripper_joint`) is
  named `gripper`, as in the state and the action; `Episode.published_names` keeps the node's names.

The rate and the frame count are checked (export_limits.py) before a frame list is built.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .export_limits import ExportBudget, check_frames, check_rate
from .reader import RunRecord
from .schemas import definition

__all__ = ["SUCCEEDED", "Episode", "NotAnEpisode", "Step", "episode_of"]

# Endings of a run that did what it was asked (the node's goal state "succeeded"); anything else
# ended on a fault, an e-stop, an interrupt or a shutdown, or is not in the file.
SUCCEEDED = ("completed", "until", "timeout")
_DISPLACEMENT_SPACES = ("joint_delta",)


class NotAnEpisode(ValueError):
    """The file holds no episode to export; the message says why, in one line."""


@dataclass(frozen=True)
class Step:
    t_ns: int
    action: Tuple[float, ...]
    joint_command: Optional[Tuple[float, ...]]
    state: Tuple[float, ...]
    frames: Tuple[int, ...]  # per view of the Episode: index into Episode.images[view]
    task: str


@dataclass
class Episode:
    path: str
    key: str  # the run's identity: the same run is one episode, whatever its file is called
    model: str
    control_hz: float
    fps: int
    action_space: str
    views: Tuple[str, ...]
    state_names: Tuple[str, ...]
    action_names: Tuple[str, ...]
    joint_command_kind: str  # "joint_position", "joint_velocity", or "" (kept only for displacement rows)
    joint_command_names: Tuple[str, ...]
    images: Dict[str, List[bytes]]  # view -> the encoded frames the model was sent, in order
    steps: List[Step] = field(default_factory=list)  # one per frame at `fps`
    played: List[Step] = field(default_factory=list)  # one per action played (steps resamples them)
    published_names: Tuple[str, ...] = ()  # the published command's names as the node sent them
    outcome: Dict[str, Any] = field(default_factory=dict)  # the outcome's fields, typed as in its message
    complete: bool = True
    damage: Optional[str] = None

    @property
    def reason(self) -> str:
        return self.outcome.get("reason", "") or "unknown"

    @property
    def succeeded(self) -> bool:
        return self.reason in SUCCEEDED

    @property
    def tasks(self) -> List[str]:
        return list(dict.fromkeys(step.task for step in self.steps))


def episode_of(record: RunRecord, *, fps: Optional[int] = None, views: Optional[Sequence[str]] = None,
               budget: Optional[ExportBudget] = None) -> Episode:
    """The episode of `record` (read with frames=True). NotAnEpisode, with one line saying why,
    when there is nothing to export; OverLimit when its rate or frame count is over the limits."""
    if record.run is None and not record.commands:
        if not record.topics:
            damage = record.damage or "no MCAP records"
            raise NotAnEpisode(f"not a recording ({'not an MCAP file' if 'InvalidMagic' in damage else damage})")
        raise NotAnEpisode("an MCAP file, but not a sequence_ai recording (no /policy/run, no /policy/command)")
    if not record.commands:
        raise NotAnEpisode("no action was played in this run: nothing to export")
    hz = _control_hz(record)
    check_rate(hz)
    if fps is None:
        if abs(hz - round(hz)) > 1e-6:
            raise NotAnEpisode(f"the model's control frequency is {hz:g} Hz; LeRobot needs a whole fps: give --fps")
        fps = round(hz)
    recorded_views = _recorded_views(record)
    chosen = tuple(recorded_views if views is None else views)
    missing = [v for v in chosen if v not in recorded_views]
    if missing:
        raise NotAnEpisode(f"no frames of view {', '.join(missing)} (recorded: {', '.join(recorded_views) or 'none'})")
    episode = Episode(
        path=record.path, key=_key(record), model=str(getattr(record.run, "model", "") or ""), control_hz=hz, fps=fps,
        action_space=next((a.action_space for a in record.answers if a.action_space), ""), views=chosen,
        state_names=(), action_names=(), joint_command_kind="", joint_command_names=(),
        images={v: [] for v in chosen}, complete=record.complete, damage=record.damage)
    episode.outcome = _outcome(record)
    steps = _steps(record, episode)
    if not steps:
        raise NotAnEpisode("no action was played after the first observation: nothing to export")
    frames = _frames(len(steps), hz, fps)
    check_frames(frames, len(steps), hz, fps, budget or ExportBudget())
    episode.played = steps
    episode.steps = [steps[math.floor(j * hz / fps + 1e-9)] for j in range(frames)]
    return episode


def _frames(steps: int, hz: float, fps: int) -> int:
    """Frames at `fps` covering the time of `steps` steps at `hz` (the last step's slot included)."""
    return math.floor((steps - 1) * fps / hz + 1e-9) + 1


def _control_hz(record: RunRecord) -> float:
    """The run's control frequency; else (a run that did not know it yet when it began) the one
    its first answered chunk was served for."""
    for value in (getattr(record.run, "control_hz", math.nan), *(a.control_hz for a in record.answers if not a.error)):
        if math.isfinite(value) and value > 0:
            return float(value)
    raise NotAnEpisode("the recording names no control frequency (no /policy/run rate, no answered chunk)")


def _recorded_views(record: RunRecord) -> Tuple[str, ...]:
    declared = tuple(getattr(record.run, "camera_views", ()) or ())
    seen = tuple(dict.fromkeys(f.view for f in record.frames))
    return tuple(v for v in declared if v in seen) + tuple(v for v in seen if v not in declared)


def _key(record: RunRecord) -> str:
    run = record.run
    if run is None:
        return f"file:{record.path}"
    return f"{run.episode_id or run.model}@{record.start_ns}"


def _outcome(record: RunRecord) -> Dict[str, Any]:
    """The outcome's fields typed as its message declares them (a number not measured: None): from
    the outcome message, else the file's metadata copy, which holds them as strings."""
    message = record.outcome
    if message is not None:  # a decoded message's fields are its __slots__
        return {name: _typed(_OUTCOME_TYPES.get(name, "string"), getattr(message, name))
                for name in message.__slots__ if name != "header"}
    return {name: _typed(_OUTCOME_TYPES.get(name, "string"), text)
            for name, text in record.metadata.get("sequence_ai.outcome", {}).items()}


_OUTCOME_TYPES = {line.split()[1]: line.split()[0] for line in definition("sequence_ai_record/RunOutcome").splitlines()
                  if line.strip() and not line.startswith("#") and len(line.split()) == 2}


def _typed(kind: str, value: Any) -> Any:
    """`value` (a decoded field, or its text) as JSON keeps it: bool, int, a finite float or None."""
    text = str(value).strip()
    try:
        if kind == "bool":
            return value if isinstance(value, bool) else {"true": True, "false": False}.get(text.lower())
        if kind.startswith(("uint", "int")):
            return int(value) if not isinstance(value, str) else (int(text) if text else None)
        if kind.startswith("float"):
            number = float(value) if not isinstance(value, str) else (float(text) if text else math.nan)
            return number if math.isfinite(number) else None
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, str) else text


def _latest(times: Sequence[int], t_ns: int) -> int:
    """Index of the latest time at or before t_ns, or -1."""
    return bisect_right(times, t_ns) - 1


def _steps(record: RunRecord, episode: Episode) -> List[Step]:
    commands = record.commands
    states = record.joint_states
    state_times = [_stamp(s) for s in states]
    frames_of = {v: [f for f in record.frames if f.view == v] for v in episode.views}
    frame_times = {v: [f.t_ns for f in frames_of[v]] for v in episode.views}
    for view in episode.views:
        episode.images[view] = [f.data for f in frames_of[view]]
    instructions = _instructions(record)
    instruction_times = [t for t, _ in instructions]
    if states:
        episode.state_names = tuple(states[-1].name)
    joint_commands = _paired_commands(record, episode, 1e9 / episode.control_hz)
    width = len(commands[0].values)
    episode.action_names = episode.state_names if len(episode.state_names) == width else tuple(
        f"action_{i}" for i in range(width))

    steps: List[Step] = []
    for i, command in enumerate(commands):
        s = _latest(state_times, command.t_ns)
        at = [_latest(frame_times[v], command.t_ns) for v in episode.views]
        if s < 0 or min(at, default=0) < 0:
            continue  # before the first observation (never, for the loop: it observes first)
        k = _latest(instruction_times, command.t_ns)
        task = instructions[k][1] if k >= 0 else (instructions[0][1] if instructions else "")
        steps.append(Step(command.t_ns, tuple(command.values), joint_commands[i] if joint_commands else None,
                          tuple(float(v) for v in states[s].position), tuple(at), task))
    return steps


def _stamp(message: object) -> int:
    stamp = message.header.stamp  # type: ignore[attr-defined]
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def _instructions(record: RunRecord) -> List[Tuple[int, str]]:
    """(time set, text) in force over the run: the recorded changes, else each request's own."""
    if record.instructions:
        return list(record.instructions)
    found: List[Tuple[int, str]] = []
    for request in record.requests:
        if request.instruction and (not found or found[-1][1] != request.instruction):
            found.append((_stamp(request), request.instruction))
    return found


def _paired_commands(record: RunRecord, episode: Episode, period_ns: float) -> Optional[List[Tuple[float, ...]]]:
    """The published command of each action, for displacement rows (else None): the one closest in
    time to the action among those published between its neighbours. None if any is missing (a dry
    run publishes nothing; a run not driven by the node has none)."""
    if episode.action_space not in _DISPLACEMENT_SPACES or not record.arm_commands:
        return None
    published = record.arm_commands
    velocity = not published[0].position and bool(published[0].velocity)
    times = [_stamp(c) for c in published]
    actions = [c.t_ns for c in record.commands]
    paired: List[Tuple[float, ...]] = []
    for i, t in enumerate(actions):
        low = (actions[i - 1] + t) // 2 if i else t - period_ns
        high = (t + actions[i + 1]) // 2 if i + 1 < len(actions) else t + period_ns
        near = range(bisect_right(times, low), bisect_right(times, high))
        if not near:
            return None
        j = min(near, key=lambda j: abs(times[j] - t))
        paired.append(tuple(float(v) for v in (published[j].velocity if velocity else published[j].position)))
    episode.joint_command_kind = "joint_velocity" if velocity else "joint_position"
    episode.published_names = tuple(published[0].name)
    episode.joint_command_names = _one_name_per_joint(episode.published_names, episode.state_names)
    return paired


def _one_name_per_joint(published: Sequence[str], state: Sequence[str]) -> Tuple[str, ...]:
    """The published names, with the gripper joint named as the state names it: the node publishes
    `gripper_joint` (fr3_finger_joint1) where the state and the action say `gripper`."""
    if "gripper" in published or "gripper" not in state or len(published) != len(state):
        return tuple(published)
    return tuple("gripper" if theirs == "gripper" and ours not in state else ours
                 for ours, theirs in zip(published, state))

