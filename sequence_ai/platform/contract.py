"""The model contract, checked on every /act: the request schema, the observation against the
catalogue row (views, frame sizes, image bytes, state widths), and a policy's output.

Schema errors surface as 422 with FastAPI's pydantic detail list (docs/PROTOCOL.md §3.2 D); contract errors as
400 with a sentence naming what is wrong and what was sent (docs/PROTOCOL.md §3.2 A).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Annotated, Any, Dict, List, Optional, Tuple

from pydantic import BaseModel, ConfigDict, Field

from . import catalogue
from .frames import holds_declared_pixels, image_size
from .observation import LazyImages, PolicyInput

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
MAX_IMAGES = 32
# A URI scheme (https:, file:, data:, s3:...). No base64 string contains a colon, so this never
# mistakes image bytes for a URL.
_URL = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*:")


class ContractError(Exception):
    def __init__(self, status: int, detail: Any):
        super().__init__(str(detail))
        self.status = status
        self.detail = detail


class ImageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    view: Annotated[str, Field(max_length=128)]
    data: str
    timestamp_ms: Optional[int] = None


class ProprioceptionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    joint_positions: Annotated[List[FiniteFloat], Field(max_length=64)]
    joint_velocities: Optional[Annotated[List[FiniteFloat], Field(max_length=64)]] = None
    end_effector_pose: Optional[Annotated[List[FiniteFloat], Field(max_length=64)]] = None
    gripper: Optional[Annotated[List[FiniteFloat], Field(max_length=8)]] = None


class ObservationIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    images: Annotated[List[ImageIn], Field(max_length=MAX_IMAGES)]
    proprioception: ProprioceptionIn
    instruction: Annotated[str, Field(max_length=4096)]
    state: Optional[Dict[str, Annotated[List[FiniteFloat], Field(max_length=64)]]] = None


class ActRequest(BaseModel):
    # Unknown top-level keys are pass-through options (action_horizon, robot, ...): docs/PROTOCOL.md §5.1.
    model_config = ConfigDict(extra="allow")
    model: Annotated[str, Field(min_length=1, max_length=256)]
    observation: ObservationIn
    seed: Optional[int] = None
    episode_id: Optional[Annotated[str, Field(max_length=128)]] = None
    embodiment: Optional[Annotated[str, Field(max_length=128)]] = None


class EpisodeEndRequest(BaseModel):
    episode_id: Optional[Annotated[str, Field(max_length=128)]] = None


def _where(index: int, frame: ImageIn) -> str:
    return f"observation.images[{index}] (view {frame.view!r})"


def _refuse_url(index: int, frame: ImageIn) -> None:
    """Any view, declared or not: a URL is refused, never fetched (docs/PROTOCOL.md §5.1)."""
    if _URL.match(frame.data[:64]):
        raise ContractError(400, f"{_where(index, frame)}: data is a URL, and URLs are never fetched; "
                                 "send standard base64 of the JPEG or PNG bytes")


def _decode_frame(index: int, frame: ImageIn) -> Tuple[bytes, Tuple[int, int]]:
    where = _where(index, frame)
    try:
        raw = base64.b64decode(frame.data, validate=True)
    except (binascii.Error, ValueError):
        raise ContractError(400, f"{where}: data is not standard base64 of a JPEG or PNG image") from None
    size = image_size(raw)
    if size is None:
        raise ContractError(400, f"{where}: data does not decode to a complete JPEG or PNG image")
    if not holds_declared_pixels(raw, size):
        raise ContractError(400, f"{where}: declares {size[0]}x{size[1]} pixels, more than its {len(raw)} bytes "
                                 "can hold")
    return raw, size


def check_observation(request: ActRequest, row: Dict[str, Any]) -> Tuple[PolicyInput, Dict[str, int], List[str]]:
    """The policy's input, usage counters and warnings; raises ContractError on a broken contract."""
    obs = request.observation
    declared: List[str] = list(row.get("camera_views") or [])
    sent_views = [f.view for f in obs.images]
    missing = [v for v in declared if v not in sent_views]
    if missing:
        raise ContractError(400, f"observation.images is missing view(s): {', '.join(missing)}; "
                                 f"you sent: {', '.join(sent_views) or 'none'}")
    warnings: List[str] = []
    per_view: Dict[str, List[int]] = {}
    for i, frame in enumerate(obs.images):
        per_view.setdefault(frame.view, []).append(i)
    undeclared = [v for v in per_view if declared and v not in declared]
    if undeclared:
        warnings.append(f"view(s) not declared by the model were ignored: {', '.join(undeclared)}")

    for i, frame in enumerate(obs.images):
        _refuse_url(i, frame)
    context = int(row.get("context_frames") or 1)
    encoded: Dict[str, bytes] = {}
    frames_used = 0
    for view in declared or list(per_view):
        # Every frame of a declared view must be what encode() makes, older context frames too;
        # the model reads only the last `context_frames` of them.
        for i in per_view[view]:
            raw, size = _decode_frame(i, obs.images[i])
            if not catalogue.frame_size_ok(row, size):
                raise ContractError(400, f"{_where(i, obs.images[i])} is {size[0]}x{size[1]}; this model needs "
                                         f"{catalogue.expected_frame_rule(row)} (its client_resize "
                                         f"{row.get('client_resize')}); use encode(frame, model)")
            encoded[view] = raw
        frames_used += len(per_view[view][-context:])

    layout = row.get("state_layout") or {}
    joints = _fit("joint_positions", list(obs.proprioception.joint_positions), layout.get("joint_positions"), warnings)
    gripper_in = obs.proprioception.gripper
    want_gripper = int(layout.get("gripper") or 0)
    if gripper_in is None and want_gripper:
        warnings.append(f"gripper was not sent; zero-filled to {want_gripper} value(s) (hand open)")
        gripper = [0.0] * want_gripper
    else:
        gripper = _fit("gripper", list(gripper_in or []), want_gripper if layout else None, warnings)

    usage = {"frames_received": len(obs.images), "frames_used": frames_used}
    policy_input = PolicyInput(
        images=LazyImages(encoded), joint_positions=joints, gripper=gripper, instruction=obs.instruction,
        seed=request.seed, model=row, episode_id=request.episode_id, state=dict(obs.state or {}),
    )
    return policy_input, usage, warnings


def _fit(name: str, values: List[float], width: Optional[int], warnings: List[str]) -> List[float]:
    """Pad short vectors with zeros and truncate long ones, saying so (docs/PROTOCOL.md §8.1, and the padding
    warning of §5.1; §5.2's "wrong proprio length" 400 disagrees, see docs/PLATFORM.md)."""
    if width is None or len(values) == width:
        return values
    if len(values) < width:
        warnings.append(f"{name} had {len(values)} values; padded to {width}")
        return values + [0.0] * (width - len(values))
    warnings.append(f"{name} had {len(values)} values; truncated to {width}")
    return values[:width]


def check_rows(rows: Any, row: Dict[str, Any]) -> List[List[float]]:
    """A policy's output as a list of float rows, or ContractError(500) naming the break."""
    steps = getattr(rows, "steps", rows)
    if hasattr(steps, "tolist"):  # a numpy array
        steps = steps.tolist()
    if not isinstance(steps, (list, tuple)) or not steps:
        raise ContractError(500, f"policy returned {type(steps).__name__}, not a non-empty list of action rows")
    width = row.get("action_dim")
    out: List[List[float]] = []
    for i, step in enumerate(steps):
        values = step.get("values") if isinstance(step, dict) else step
        try:
            floats = [float(v) for v in values]
        except (TypeError, ValueError):
            raise ContractError(500, f"policy row {i} is not a list of numbers") from None
        if width is not None and len(floats) != width:
            raise ContractError(500, f"policy row {i} has {len(floats)} values; the model's action_dim is {width}")
        if not all(math.isfinite(v) for v in floats):
            raise ContractError(500, f"policy row {i} has a non-finite value")
        out.append(floats)
    return out
