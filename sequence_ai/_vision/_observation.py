"""Building an observation the model will read as meant (docs/PROTOCOL.md §8.1), and checking one
against the model's catalogue row (§7.2, §7.3).

Each mistake caught here fails silently on the server: an undeclared camera is uploaded and
ignored, a short state is zero-padded, a missing gripper commands the hand open. An observation
is checked once against a row: `observation()` checks what it builds, the send-time check
(`validate=`) checks one assembled by hand, and either keeps its `Verdict` on the observation.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from .._errors import InvalidArgumentType, ObservationMismatch
from .._wire import ImageFrame, Model, Observation, Proprioception

__all__ = ["Verdict", "checked", "joints_of", "observation", "observation_problems", "problems_message", "trim_frames"]

REJECTED_SUFFIX = "at least one will be rejected"
QUIETLY_WRONG_SUFFIX = "accepted but quietly wrong"


def _view_problems(model: Model, views: Sequence[str]) -> Tuple[List[str], List[str]]:
    """(unknown views, missing views), each in first-seen / declared order."""
    if not model.camera_views:
        return [], []
    declared = set(model.camera_views)
    sent: List[str] = []
    for view in views:
        if view not in sent:
            sent.append(view)
    unknown = [v for v in sent if v not in declared]
    missing = [v for v in model.camera_views if v not in sent]
    return unknown, missing


def _state_problems(
    model: Model, joints: Optional[Sequence[float]], gripper: Optional[Sequence[float]]
) -> List[str]:
    name = model.short_id
    state_dim = model.state_dim
    if joints is None:
        if state_dim is None or state_dim > 0:
            return [f"{name} reads joint positions but none were given"]
        return []
    if not state_dim:
        return []  # unknown width, or a model that never reads joints
    n_joints, n_gripper = len(joints), len(gripper or [])
    layout = model.state_layout
    if layout:
        problems = []
        want_joints = int(layout.get("joint_positions", 0))
        want_gripper = int(layout.get("gripper", 0))
        # The halves are not interchangeable: 8 joints + no gripper sums right and is still wrong.
        if n_joints != want_joints:
            problems.append(
                f"{name} reads {want_joints} joint position(s) (state_layout {layout}); got {n_joints}"
            )
        if n_gripper != want_gripper:
            problems.append(
                f"{name} reads {want_gripper} gripper value(s) (state_layout {layout}); got {n_gripper}"
                + (" — a missing gripper is zero-filled, commanding the hand open" if n_gripper == 0 else "")
            )
        return problems
    if n_joints + n_gripper != state_dim:
        return [f"{name} reads a state of width {state_dim}; got {n_joints} joint(s) + {n_gripper} gripper"]
    return []


def observation_problems(model: Model, observation: Observation) -> Tuple[List[str], bool]:
    """What is wrong with `observation` for `model`, and whether the server will reject it.

    `rejected` is True iff a declared view is missing (the worker answers 400); every other
    problem is accepted by the server and quietly wrong."""
    views = [frame.view for frame in observation.images]
    unknown, missing = _view_problems(model, views)
    problems: List[str] = []
    if unknown:
        problems.append(
            f"unknown view(s) {', '.join(unknown)}: {model.short_id} declares "
            f"{', '.join(model.camera_views)} and ignores anything else"
        )
    if missing:
        problems.append(
            f"missing view(s) {', '.join(missing)}: {model.short_id} requires "
            f"{', '.join(model.camera_views)}; you sent {', '.join(views) or 'none'}"
        )
    proprio = observation.proprioception
    problems += _state_problems(model, proprio.joint_positions if proprio else None, proprio.gripper if proprio else None)
    return problems, bool(missing)


Basis = Tuple[Tuple[str, ...], Optional[int], int]  # the views, joint count (None: none) and gripper width checked


@dataclass(frozen=True)
class Verdict:
    """One observation checked against one catalogue row, and what it was checked from."""

    row: Model
    basis: Basis
    problems: Tuple[str, ...]
    rejected: bool  # a declared view is missing: the worker answers 400

    def message(self, model: Model) -> str:
        return problems_message(model, list(self.problems), self.rejected)


def _basis(observation: Observation) -> Basis:
    proprio = observation.proprioception
    joints = proprio.joint_positions if proprio else None
    gripper = proprio.gripper if proprio else None
    return (tuple(frame.view for frame in observation.images), None if joints is None else len(joints),
            len(gripper or []))


def checked(model: Model, observation: Observation) -> Verdict:
    """The verdict on `observation` for `model`: the one it carries, if it was checked against this
    row as it is now (same views, same state widths); else it is checked now, and keeps it."""
    basis = _basis(observation)
    verdict = observation._verdict
    if isinstance(verdict, Verdict) and verdict.basis == basis and (verdict.row is model or verdict.row == model):
        return verdict
    problems, rejected = observation_problems(model, observation)
    verdict = observation._verdict = Verdict(model, basis, tuple(problems), rejected)
    return verdict


def joints_of(observation: Any) -> Optional[List[float]]:
    """The joint positions an observation carries (what the robot reported), if any."""
    proprio = getattr(observation, "proprioception", None)
    if proprio is None and isinstance(observation, Mapping):
        proprio = observation.get("proprioception")
    joints = getattr(proprio, "joint_positions", None)
    if joints is None and isinstance(proprio, Mapping):
        joints = proprio.get("joint_positions")
    try:
        return [float(v) for v in joints] if joints is not None else None
    except (TypeError, ValueError):
        return None


def problems_message(model: Model, problems: List[str], rejected: bool) -> str:
    """One line for a warning or an InvalidRequest, ending with what the server will do."""
    verdict = REJECTED_SUFFIX if rejected else QUIETLY_WRONG_SUFFIX
    return f"observation does not match {model.short_id}: " + "; ".join(problems) + f" — {verdict}"


def trim_frames(model: Model, observation: Observation) -> Tuple[Observation, bool]:
    """Keep the last `context_frames` frames of each view (docs/PROTOCOL.md §7.3); never pads.

    Views keep their first-seen order; within a view, timestamped frames come first in
    ascending time, untimestamped ones after in the order given. Returns the (possibly new)
    observation and whether anything was dropped. Unknown `context_frames` leaves it untouched."""
    keep = model.context_frames
    if not keep or keep < 1:
        return observation, False
    groups: Dict[str, List[Tuple[int, ImageFrame]]] = {}
    for index, frame in enumerate(observation.images):
        groups.setdefault(frame.view, []).append((index, frame))
    if all(len(frames) <= keep for frames in groups.values()):
        return observation, False
    images: List[ImageFrame] = []
    for frames in groups.values():
        timed = sorted((f for f in frames if f[1].timestamp_ms is not None), key=lambda f: (f[1].timestamp_ms, f[0]))
        untimed = [f for f in frames if f[1].timestamp_ms is None]
        images += [frame for _, frame in (timed + untimed)[-keep:]]
    trimmed = Observation(
        images=images,
        proprioception=observation.proprioception,
        instruction=observation.instruction,
        state=observation.state,
    )
    return trimmed, True


def _as_floats(name: str, values: Optional[Sequence[float]]) -> Optional[List[float]]:
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise InvalidArgumentType(f"{name} must be a sequence of numbers (got {type(values).__name__})")
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        raise InvalidArgumentType(f"{name} must be a sequence of numbers (got {values!r})") from None


def observation(
    model: Union[Model, str],
    *,
    images: Mapping[str, Any],
    instruction: str,
    joints: Optional[Sequence[float]] = None,
    gripper: Optional[Sequence[float]] = None,
    joint_velocities: Optional[Sequence[float]] = None,
    end_effector_pose: Optional[Sequence[float]] = None,
    timestamp_ms: Optional[int] = None,
    quality: int = 95,
    strict: bool = True,
) -> Observation:
    """An `Observation` sized, encoded and checked for `model` (a `Model` or a catalogue name).

    `images` maps view name → frame (base64 str, encoded bytes, ndarray or PIL image; the last
    two need the ``[image]`` extra). A camera the model does not declare is
    dropped with a warning naming it; a declared view that is missing, or a state that does not
    match `state_layout` half by half, raises ObservationMismatch (a ValueError; `strict=False`:
    one warning instead).
    Each frame is sized and JPEG-encoded by `encode()`."""
    from .._catalogue._models import resolve_model
    from ._encode import encode

    row = resolve_model(model, endpoint="act")
    if not isinstance(images, Mapping):
        raise InvalidArgumentType(
            f"images must be a mapping of view name -> frame, e.g. {{'exterior_1': frame}} "
            f"(got {type(images).__name__})"
        )
    if not isinstance(instruction, str):
        raise InvalidArgumentType(f"instruction must be a str (got {type(instruction).__name__})")
    joint_list = _as_floats("joints", joints)
    if joint_list is None and row.state_dim == 0:
        joint_list = []
    gripper_list = _as_floats("gripper", gripper)

    unknown, missing = _view_problems(row, list(images))
    problems: List[str] = []
    if missing:
        problems.append(
            f"missing view(s) {', '.join(missing)}: {row.short_id} requires "
            f"{', '.join(row.camera_views)}; you gave {', '.join(images) or 'none'}"
        )
    problems += _state_problems(row, joint_list, gripper_list)
    if problems:
        message = problems_message(row, problems, bool(missing))
        if strict:
            raise ObservationMismatch(message)
        warnings.warn(message, UserWarning, stacklevel=2)
    if unknown:
        warnings.warn(
            f"dropped camera(s) {', '.join(unknown)}: {row.short_id} does not declare them "
            f"(it reads {', '.join(row.camera_views)}); they would be uploaded and ignored",
            UserWarning,
            stacklevel=2,
        )
    frames = [
        ImageFrame(view=str(view), data=encode(frame, row, quality=quality), timestamp_ms=timestamp_ms)
        for view, frame in images.items()
        if view not in unknown
    ]
    built = Observation(
        images=frames,
        proprioception=Proprioception(
            joint_positions=joint_list if joint_list is not None else [],
            joint_velocities=_as_floats("joint_velocities", joint_velocities),
            end_effector_pose=_as_floats("end_effector_pose", end_effector_pose),
            gripper=gripper_list,
        ),
        instruction=instruction,
    )
    built._verdict = Verdict(row, _basis(built), tuple(problems), bool(missing))  # sent unchecked again
    return built
