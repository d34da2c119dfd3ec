"""Wire objects the caller builds or reads: plain dataclasses, wire names kept verbatim.

Unknown fields on an answer are kept in `extra` (catalogue rows keep the whole row in `raw`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ._errors import SequencesError

__all__ = ["ImageFrame", "Model", "Observation", "Proprioception"]


@dataclass
class ImageFrame:
    """One camera frame: `view` is a name the model declares, `data` base64 JPEG/PNG."""

    view: str
    data: str
    timestamp_ms: Optional[int] = None

    def to_wire(self) -> dict:
        return {"view": self.view, "data": self.data, "timestamp_ms": self.timestamp_ms}


@dataclass
class Proprioception:
    """The robot's own state. Only joint_positions is required; the gripper is a list of its own."""

    joint_positions: List[float]
    joint_velocities: Optional[List[float]] = None
    end_effector_pose: Optional[List[float]] = None
    gripper: Optional[List[float]] = None

    def to_wire(self) -> dict:
        # Unknown fields go out as explicit nulls: omission and zeros mean different things.
        return {
            "joint_positions": [float(v) for v in self.joint_positions],
            "joint_velocities": None if self.joint_velocities is None else [float(v) for v in self.joint_velocities],
            "end_effector_pose": None if self.end_effector_pose is None else [float(v) for v in self.end_effector_pose],
            "gripper": None if self.gripper is None else [float(v) for v in self.gripper],
        }


@dataclass
class Observation:
    """What one request carries: images, proprioception and the instruction."""

    images: List[ImageFrame]
    proprioception: Proprioception
    instruction: str
    state: Optional[Dict[str, List[float]]] = None
    # Not a field: the catalogue check's verdict (_vision._observation.Verdict), kept so that an
    # observation is checked once against a row, when built or else when first sent.
    _verdict = None

    def to_wire(self) -> dict:
        wire: Dict[str, Any] = {
            "images": [frame.to_wire() for frame in self.images],
            "proprioception": self.proprioception.to_wire(),
            "instruction": self.instruction,
        }
        if self.state:  # omitted entirely when absent: older workers reject unknown keys
            wire["state"] = {name: [float(v) for v in values] for name, values in self.state.items()}
        return wire


def _tuple_or_none(value: Any) -> Optional[Tuple[Any, ...]]:
    return tuple(value) if isinstance(value, (list, tuple)) else None


@dataclass(frozen=True)
class Model:
    """One catalogue row (GET /v1/models). The whole row is kept in `raw`; the fields the client
    acts on are lifted to attributes."""

    id: str
    endpoint: str = ""
    architecture: str = ""
    robot: Optional[str] = None
    action_dim: Optional[int] = None
    state_dim: Optional[int] = None
    state_layout: Optional[Dict[str, int]] = None
    action_horizon: Optional[int] = None
    control_hz: Optional[float] = None
    open_loop_horizon: Optional[int] = None
    sustains_seconds: Optional[float] = None
    camera_views: Tuple[str, ...] = ()
    context_frames: Optional[int] = None
    training_frame_size: Optional[Tuple[int, ...]] = None
    input_aspect_ratio: Optional[float] = None
    input_resize: Optional[str] = None
    client_resize: Optional[Dict[str, Any]] = None
    action_space: Optional[str] = None
    action_semantics: Optional[Dict[str, Any]] = None
    pass_raw: Optional[bool] = None
    raw: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def short_id(self) -> str:
        return self.id.rsplit("/", 1)[-1]

    @classmethod
    def from_wire(cls, row: Any) -> Model:
        if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not row["id"]:
            raise SequencesError("malformed catalogue row: it has no string 'id'")
        try:
            return cls(
                id=row["id"],
                endpoint=str(row.get("endpoint") or ""),
                architecture=str(row.get("architecture") or ""),
                robot=_str_or_none(row.get("robot")),
                action_dim=_int_or_none(row.get("action_dim")),
                state_dim=_int_or_none(row.get("state_dim")),
                state_layout=_layout_or_none(row.get("state_layout")),
                action_horizon=_int_or_none(row.get("action_horizon")),
                control_hz=_float_or_none(row.get("control_hz")),
                open_loop_horizon=_int_or_none(row.get("open_loop_horizon")),
                sustains_seconds=_float_or_none(row.get("sustains_seconds")),
                camera_views=_views(row.get("camera_views")),
                context_frames=_int_or_none(row.get("context_frames")),
                training_frame_size=_tuple_or_none(row.get("training_frame_size")),
                input_aspect_ratio=_float_or_none(row.get("input_aspect_ratio")),
                input_resize=_str_or_none(row.get("input_resize")),
                client_resize=row.get("client_resize") if isinstance(row.get("client_resize"), dict) else None,
                action_space=_str_or_none(row.get("action_space")),
                action_semantics=row.get("action_semantics") if isinstance(row.get("action_semantics"), dict) else None,
                pass_raw=row.get("pass_raw") if isinstance(row.get("pass_raw"), bool) else None,
                raw=dict(row),
            )
        except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: int(inf)
            raise SequencesError(f"malformed catalogue row {row.get('id')!r}: {exc}") from None


def _int_or_none(value: Any) -> Optional[int]:
    if value is None or isinstance(value, bool):
        return None
    return int(value)


def _float_or_none(value: Any) -> Optional[float]:
    if value is None or isinstance(value, bool):
        return None
    return float(value)


def _str_or_none(value: Any) -> Optional[str]:
    return None if value is None else str(value)


def _views(value: Any) -> Tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"camera_views must be a list of names (got {type(value).__name__})")
    return tuple(str(v) for v in value)


def _layout_or_none(value: Any) -> Optional[Dict[str, int]]:
    if not isinstance(value, dict):
        return None
    return {str(k): int(v) for k, v in value.items()}
