"""What the worker answers: an `ActionChunk` inside a `Prediction` (WIRE.md §5.1).

`parse_prediction` is the only door from worker JSON into the client. Anything malformed — not an
object, a missing required field, a non-numeric value, a ragged or empty chunk, NaN or infinity —
becomes a SequencesError here, so the control loop never sees another exception type and never
hands a non-finite number to the robot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence

from ._errors import SequencesError

__all__ = ["ActionChunk", "Prediction", "parse_prediction"]

Row = List[float]


@dataclass(frozen=True)
class ActionChunk:
    """A block of future actions, one row per control period, oldest first."""

    steps: List[Row]
    robot: str
    action_space: str
    action_dim: int
    control_frequency_hz: float
    covers_seconds: float
    open_loop_horizon: Optional[int] = None
    sustains_seconds: Optional[float] = None
    extra: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # The observation the chunk was computed from (set on the chunks run() hands to on_chunk).
    observation: Any = field(default=None, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.steps)

    def __getitem__(self, index: int) -> Row:
        return self.steps[index]

    def executable_rows(self, override: Optional[int] = None) -> List[Row]:
        """The rows to play before replanning: cut to the open-loop horizon (§7.4)."""
        horizon = override or self.open_loop_horizon
        rows = self.steps[:horizon] if horizon else self.steps
        return [list(row) for row in rows]

    def __str__(self) -> str:
        n = len(self.steps)
        dims = len(self.steps[0]) if self.steps else self.action_dim
        text = (f"ActionChunk({n} steps x {dims} dims, {self.action_space}, {self.robot}, "
                f"{self.control_frequency_hz:g} Hz, covers {self.covers_seconds:g}s")
        if self.open_loop_horizon and self.open_loop_horizon != n:
            text += f", replan after {self.open_loop_horizon}"
        return text + ")"

    __repr__ = __str__


@dataclass(frozen=True)
class Prediction:
    """One /act answer. `action_chunk` holds every row the worker sent (not cut to the horizon)."""

    action_chunk: ActionChunk
    id: str
    model: str
    usage: Dict[str, Any] = field(default_factory=dict)
    perf: Dict[str, Any] = field(default_factory=dict)
    warnings: List[str] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


_REQUIRED = ("robot", "action_space", "action_dim", "control_frequency_hz", "covers_seconds")
_KNOWN = {*_REQUIRED, "steps", "open_loop_horizon", "sustains_seconds"}


def _malformed(why: str) -> SequencesError:
    return SequencesError(f"malformed /act answer from the worker: {why}")


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _malformed(f"{what} is not a number")
    number = float(value)
    if not math.isfinite(number):
        raise _malformed(f"{what} is not finite ({number})")
    return number


def _positive_int(value: Any, what: str) -> int:
    number = _number(value, what)
    if number != int(number) or number < 1:
        raise _malformed(f"{what} is not a positive integer")
    return int(number)


_FLOAT_ONLY = {float}


def _row(step: Any, index: int) -> Row:
    values: Any = step.get("values") if isinstance(step, dict) else step
    if not isinstance(values, (list, tuple)) or not values:
        raise _malformed(f"step {index} has no list of values")
    if set(map(type, values)) == _FLOAT_ONLY and all(map(math.isfinite, values)):
        return list(values)  # the usual row, checked at C speed; anything else gets named below
    return [_number(v, f"step {index} value {i}") for i, v in enumerate(values)]


def _steps(raw: Any) -> List[Row]:
    if not isinstance(raw, list) or not raw:
        raise _malformed("action_chunk.steps is missing or empty")
    rows = [_row(step, i) for i, step in enumerate(raw)]
    width = len(rows[0])
    if any(len(row) != width for row in rows):
        raise _malformed("action_chunk rows have different widths")
    return rows


def parse_chunk(raw: Any) -> ActionChunk:
    if not isinstance(raw, dict):
        raise _malformed("no action_chunk object")
    missing = [name for name in _REQUIRED if raw.get(name) is None]
    if missing:
        raise _malformed(f"action_chunk lacks {', '.join(missing)}")
    if not isinstance(raw["robot"], str) or not isinstance(raw["action_space"], str):
        raise _malformed("action_chunk.robot and action_space must be strings")
    steps = _steps(raw.get("steps"))
    action_dim = _positive_int(raw["action_dim"], "action_dim")
    if len(steps[0]) != action_dim:
        raise _malformed(f"rows are {len(steps[0])} wide but action_dim is {action_dim}")
    hz = _number(raw["control_frequency_hz"], "control_frequency_hz")
    if hz <= 0:
        raise _malformed("control_frequency_hz must be positive")
    horizon = raw.get("open_loop_horizon")
    sustains = raw.get("sustains_seconds")
    return ActionChunk(
        steps=steps,
        robot=raw["robot"],
        action_space=raw["action_space"],
        action_dim=action_dim,
        control_frequency_hz=hz,
        covers_seconds=_number(raw["covers_seconds"], "covers_seconds"),
        open_loop_horizon=None if horizon is None else _positive_int(horizon, "open_loop_horizon"),
        sustains_seconds=None if sustains is None else _number(sustains, "sustains_seconds"),
        extra={k: v for k, v in raw.items() if k not in _KNOWN},
    )


def _dict(value: Any) -> Dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def parse_prediction(body: Any, *, rid: str, model: str) -> Prediction:
    """Worker JSON → Prediction, or SequencesError (never any other exception)."""
    if not isinstance(body, dict):
        raise _malformed("the answer is not a JSON object")
    chunk = parse_chunk(body.get("action_chunk"))
    warnings = body.get("warnings")
    return Prediction(
        action_chunk=chunk,
        id=str(body.get("id") or body.get("rid") or rid),
        model=str(body.get("model") or model),
        usage=_dict(body.get("usage")),
        perf=_dict(body.get("perf")),
        warnings=[str(w) for w in warnings] if isinstance(warnings, list) else [],
        raw=body,
    )


def rows_are_finite(rows: Sequence[Sequence[float]]) -> bool:
    return all(math.isfinite(v) for row in rows for v in row)
