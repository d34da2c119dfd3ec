"""What to do with the rows that come back — only what the model's catalogue row declares.

`prepare()` is the checkpoint's own reference post-processing of one row (binarise the gripper,
clip), read from `model.action_semantics`; nothing is added. `to_joint_positions()` converts
only where the catalogue declares a verified conversion (`offset_q_ref`) and refuses every other
model with InvalidRequest rather than inventing one: applying a conversion a controller did not
need breaks a working arm as thoroughly as skipping one it did.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .._errors import InvalidArgument, InvalidArgumentType, InvalidIndex, InvalidRequest
from .._wire import Model

__all__ = ["prepare", "to_joint_positions"]

OFFSET_Q_REF = "offset_q_ref"


def _model(model: Union[Model, str]) -> Model:
    from .._catalogue._models import resolve_model

    return resolve_model(model, endpoint="act")


def _semantics(model: Model) -> Dict[str, Any]:
    semantics = model.action_semantics
    if not semantics:
        raise InvalidRequest(
            f"{model.short_id} declares no action_semantics in the catalogue, so there is no reference "
            "post-processing to apply; send its rows as they are"
        )
    return semantics


def _rows(chunk: Any) -> Sequence[Any]:
    if isinstance(chunk, (str, bytes)) or not hasattr(chunk, "__len__") or not hasattr(chunk, "__getitem__"):
        raise InvalidArgumentType(f"chunk must be an ActionChunk or a sequence of rows (got {type(chunk).__name__})")
    return chunk


def _floats(row: Any, what: str) -> List[float]:
    try:
        values = [float(v) for v in row]
    except (TypeError, ValueError):
        raise InvalidArgumentType(f"{what} must be a sequence of numbers (got {row!r})") from None
    if not values:
        raise InvalidArgument(f"{what} is empty")
    return values


def _check_space(chunk: Any, semantics: Dict[str, Any], model: Model) -> None:
    declared = semantics.get("rows")
    space = getattr(chunk, "action_space", None)
    if declared and space and space != declared:
        raise InvalidRequest(
            f"the chunk's rows are {space!r} but the catalogue says {model.short_id} returns {declared!r}; "
            "refusing to post-process rows whose meaning is in doubt"
        )


def _split(model: Model, width: int) -> Tuple[int, int]:
    """(joint count, gripper count) of an action row, from the model's state_layout."""
    layout = model.state_layout or {}
    joints, gripper = int(layout.get("joint_positions", 0)), int(layout.get("gripper", 0))
    if joints + gripper == width:
        return joints, gripper
    if not layout:
        return width, 0
    raise InvalidArgument(
        f"rows of {model.short_id} are {width} wide but its state_layout {layout} splits {joints + gripper}; "
        "cannot tell the gripper apart from the joints"
    )


def prepare(chunk: Any, model: Union[Model, str], i: int) -> List[float]:
    """Row `i` of `chunk` post-processed exactly as the checkpoint's reference loop does, per
    `model.action_semantics`: gripper values above `gripper_binarize_threshold` become 1.0, the
    rest 0.0, then the whole row is clipped to `clip` when one is declared."""
    row_model = _model(model)
    semantics = _semantics(row_model)
    rows = _rows(chunk)
    _check_space(chunk, semantics, row_model)
    if isinstance(i, bool) or not isinstance(i, int):
        raise InvalidArgumentType(f"i must be a row index (int), got {type(i).__name__}")
    if not -len(rows) <= i < len(rows):
        raise InvalidIndex(f"row {i} is outside the chunk's {len(rows)} rows")
    row = _floats(rows[i], f"row {i}")
    joints, gripper = _split(row_model, len(row))
    threshold = semantics.get("gripper_binarize_threshold")
    if threshold is not None and gripper:
        row[joints:] = [1.0 if v > float(threshold) else 0.0 for v in row[joints:]]
    clip = semantics.get("clip")
    if clip:
        low, high = float(clip[0]), float(clip[1])
        row = [v if math.isnan(v) else min(high, max(low, v)) for v in row]
    return row


def to_joint_positions(chunk: Any, q_ref: Sequence[float], model: Union[Model, str]) -> List[List[float]]:
    """Joint-position targets for every row of `chunk`, for a controller that only takes positions.

    Only for models whose `action_semantics.to_joint_positions` is "offset_q_ref": each row's joint
    part is a cumulative displacement from the same `q_ref` (read ONCE, before the chunk was
    requested), so target = q_ref + row; the gripper part passes through. Any other model raises
    InvalidRequest naming it and why (cosmos3-edge-policy-droid's rows are already targets).
    Play the first `chunk.open_loop_horizon` targets, as with the raw rows."""
    row_model = _model(model)
    semantics = row_model.action_semantics or {}
    conversion: Optional[str] = semantics.get("to_joint_positions")
    if conversion != OFFSET_Q_REF:
        rows_are = semantics.get("rows") or row_model.action_space or "undeclared"
        why = (
            "its rows are already joint targets — command them directly"
            if "absolute" in str(rows_are) or "position" in str(rows_are)
            else "no conversion is declared for it, and none will be guessed"
        )
        raise InvalidRequest(
            f"to_joint_positions() refuses {row_model.short_id}: the catalogue declares no verified conversion "
            f"(action_semantics.to_joint_positions = {conversion!r}, rows = {rows_are!r}); {why}"
        )
    rows = _rows(chunk)
    _check_space(chunk, semantics, row_model)
    reference = _floats(q_ref, "q_ref")
    targets = []
    for index in range(len(rows)):
        row = _floats(rows[index], f"row {index}")
        joints = _split(row_model, len(row))[0] if row_model.state_layout else len(reference)
        if len(reference) != joints or joints > len(row):
            raise InvalidArgument(
                f"q_ref has {len(reference)} joint(s) but rows of {row_model.short_id} carry {joints}"
            )
        targets.append([q + d for q, d in zip(reference, row[:joints])] + row[joints:])
    return targets
