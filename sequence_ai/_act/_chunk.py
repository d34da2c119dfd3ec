"""What the worker answers: an `ActionChunk` inside a `Prediction` (docs/PROTOCOL.md §5.1).

`parse_prediction` is the only door from worker JSON into the client. Anything malformed — not an
object, a missing required field, a non-numeric value, a ragged or empty chunk, NaN or infinity —
becomes a SequencesError here, so the control loop never sees another exception type and never
hands a non-finite number to the robot. `check_against_model` then refuses a well-formed chunk
that contradicts what the model declares (its width, its rate); `model_rate` is the rate the loop
paces at — never the number an answer claims.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from itertools import chain
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Mapping, Optional

from .._errors import SequencesError

if TYPE_CHECKING:
    from .._wire import Model

__all__ = ["ActionChunk", "Prediction", "check_against_model", "model_rate", "parse_prediction"]

Row = List[float]

# Action values must be finite, and small enough that the client's own arithmetic on rows (the
# seam jump, stitching, seam blending: sums and differences of up to three values) stays finite:
# 1e308 passes isfinite() but 1e308 - (-1e308) is inf. No bound from the catalogue: the only one it
# declares (`action_semantics.clip`) is a step of the model's own loop (`prepare()` clips to it),
# so rows beyond it are legitimate.
MAX_ACTION_MAGNITUDE = sys.float_info.max / 4
RATE_TOLERANCE = 0.01  # relative: a chunk's rate within 1 % of the model's is the model's


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


def _action_value(value: Any, what: str) -> float:
    number = _number(value, what)
    if abs(number) > MAX_ACTION_MAGNITUDE:
        raise _malformed(f"{what} is out of range ({number:g})")
    return number


def _positive_int(value: Any, what: str) -> int:
    number = _number(value, what)
    if number != int(number) or number < 1:
        raise _malformed(f"{what} is not a positive integer")
    return int(number)


_FLOAT_ONLY = {float}
_LIST_ONLY = {list}


def _row(step: Any, index: int) -> Row:
    values: Any = step.get("values") if isinstance(step, dict) else step
    if not isinstance(values, (list, tuple)) or not values:
        raise _malformed(f"step {index} has no list of values")
    if (set(map(type, values)) == _FLOAT_ONLY and all(map(math.isfinite, values))
            and max(map(abs, values)) <= MAX_ACTION_MAGNITUDE):
        return list(values)  # the usual row, checked at C speed; anything else gets named below
    return [_action_value(v, f"step {index} value {i}") for i, v in enumerate(values)]


def _steps(raw: Any) -> List[Row]:
    if not isinstance(raw, list) or not raw:
        raise _malformed("action_chunk.steps is missing or empty")
    rows = _usual_rows(raw)
    if rows is None:  # something to name: row by row, the first problem raised
        rows = [_row(step, i) for i, step in enumerate(raw)]
    width = len(rows[0])
    if any(len(row) != width for row in rows):
        raise _malformed("action_chunk rows have different widths")
    return rows


def _usual_rows(raw: List[Any]) -> Optional[List[Row]]:
    """`_row`'s checks of the usual answer — every row a non-empty list of finite floats within
    range — made once over all of its values at C speed: the rows, or None to go row by row."""
    values = [step.get("values") if isinstance(step, dict) else step for step in raw]
    if set(map(type, values)) != _LIST_ONLY or not all(values):
        return None
    flat = list(chain.from_iterable(values))
    if (set(map(type, flat)) == _FLOAT_ONLY and all(map(math.isfinite, flat))
            and max(map(abs, flat)) <= MAX_ACTION_MAGNITUDE):
        return [list(row) for row in values]
    return None


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


def _declared_number(value: Any) -> Optional[float]:
    """A positive finite number a model declares, or None (absent, or not a usable number)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) and number > 0 else None


def _declared(declared: Optional[Mapping[str, Any]], row: Optional[Model], connect_key: str,
              row_value: Any) -> List[tuple]:
    """(value, where) for each source that declares the field: the connect answer, the row."""
    found = []
    value = _declared_number((declared or {}).get(connect_key))
    if value is not None:
        found.append((value, "its connect answer"))
    value = _declared_number(row_value) if row is not None else None
    if value is not None:
        found.append((value, "the catalogue"))
    return found


def model_rate(declared: Optional[Mapping[str, Any]], row: Optional[Model]) -> Optional[float]:
    """The model's control rate — the connect answer's `control_frequency_hz`, else the catalogue
    row's `control_hz` — or None when neither declares one (the loop then paces at `control_hz=`
    or 10 Hz). Never a chunk's own claim."""
    rates = _declared(declared, row, "control_frequency_hz", row.control_hz if row is not None else None)
    return rates[0][0] if rates else None


def check_against_model(chunk: ActionChunk, model: str, declared: Optional[Mapping[str, Any]],
                        row: Optional[Model]) -> None:
    """Refuse a chunk that contradicts the model, against both the connect answer (`declared`)
    and the catalogue row: another width (its columns would land on the wrong joints), or another
    rate (its rows would be played at the model's rate, not the one they were computed for)."""
    for width, where in _declared(declared, row, "action_dim", row.action_dim if row is not None else None):
        if chunk.action_dim != width:
            raise SequencesError(f"the worker sent {chunk.action_dim}-wide actions but {model} declares "
                                 f"action_dim {width:g} ({where}); refusing to play them")
    for rate, where in _declared(declared, row, "control_frequency_hz", row.control_hz if row is not None else None):
        if not math.isclose(chunk.control_frequency_hz, rate, rel_tol=RATE_TOLERANCE):
            raise SequencesError(f"the worker's chunk is for {chunk.control_frequency_hz:g} Hz but {model} runs "
                                 f"at {rate:g} Hz ({where}); refusing to play it")
