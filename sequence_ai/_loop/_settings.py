"""The arguments of one run(), checked once and frozen (WIRE.md §7.1).

`Policy.run()` is the only place the parameters and their defaults are written; it hands its
arguments here as a mapping and the control loop reads this object. Everything derived from
them (how `on_underrun` is called, the stitch mode, the pacer) is resolved here too, so the
loop never re-interprets an argument.
"""

from __future__ import annotations

import inspect
import math
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

from .._errors import InvalidArgument, InvalidArgumentType
from ._budget import check_budget
from ._instruction import check_instruction
from ._pacing import MonotonicPacer, Pacer
from ._stitch import STITCH_MODES

__all__ = ["AUTO", "MAX_RUN_SECONDS", "RunSettings", "check_max_seconds"]

AUTO = "auto"  # lookahead: as many requests in flight as the latency needs
# The longest max_seconds a run takes: a day is no single run, and far above it the loop's own
# arithmetic overflows (1e308 s: act()'s action bound; 1e300 s: a wait's timeout).
MAX_RUN_SECONDS = 86400.0

Callback = Optional[Callable[..., Any]]


@dataclass(frozen=True)
class RunSettings:
    observe: Callable[[], Any]
    act: Callable[[List[float]], Any]
    max_actions: int
    validate: Optional[Callable[[List[float]], bool]]
    hold: Callback
    on_chunk: Callback
    on_underrun: Callback
    on_status: Callback
    on_warming: Callback
    prefetch: bool
    lookahead: Union[int, str]  # an int >= 1, or AUTO
    open_loop_horizon: Optional[int]
    max_seconds: Optional[float]
    until: Optional[Callable[[], bool]]
    startup_timeout_s: float
    smooth_seam: int
    stitch: str  # one of STITCH_MODES
    pacer: Pacer
    control_hz: Optional[float]
    episode_id: str
    instruction: Optional[str]  # in force from the first observation; not a swap
    options: Mapping[str, Any]
    hold_on_underrun: bool  # on_underrun takes no argument: called when a stall begins
    record: Any = None  # a file path or a sequence_ai.recording.Recorder: record the run (docs/RECORDING.md)
    take_over: bool = False  # resolved: the newest chunk replaces the rows not yet played (_takeover.py)
    request_budget: Optional[float] = None  # requests per second with take_over (None: _budget.default_budget)

    @property
    def pipelined(self) -> bool:
        """Requests are scheduled from the latency estimate, as many in flight as it needs."""
        return self.lookahead == AUTO

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> RunSettings:
        """Check run()'s arguments (a dict of its parameters, `options` holding the rest)."""
        a: Dict[str, Any] = dict(arguments)
        max_actions = a["max_actions"]
        if not isinstance(max_actions, int) or isinstance(max_actions, bool) or max_actions <= 0:
            raise InvalidArgument(f"max_actions must be a positive int (got {max_actions!r})")
        lookahead = a["lookahead"]
        if lookahead != AUTO and (not isinstance(lookahead, int) or isinstance(lookahead, bool) or lookahead < 1):
            raise InvalidArgument(f"lookahead must be an int >= 1 or {AUTO!r} (got {lookahead!r})")
        smooth_seam = a["smooth_seam"]
        if not isinstance(smooth_seam, int) or isinstance(smooth_seam, bool) or smooth_seam < 0:
            raise InvalidArgument(f"smooth_seam must be an int >= 0 (got {smooth_seam!r})")
        max_seconds = a["max_seconds"]
        if max_seconds is not None:
            check_max_seconds(max_seconds)
        horizon = a["open_loop_horizon"]
        if horizon is not None and (not isinstance(horizon, int) or isinstance(horizon, bool) or horizon < 1):
            raise InvalidArgument(f"open_loop_horizon must be an int >= 1 (got {horizon!r})")
        control_hz = a["control_hz"]
        if control_hz is not None and not (_is_number(control_hz) and math.isfinite(control_hz) and control_hz > 0):
            raise InvalidArgument(f"control_hz must be a finite number > 0 (got {control_hz!r})")
        instruction = a.pop("instruction")
        if instruction is not None:
            check_instruction(instruction)
        for name in ("observe", "act"):
            if not callable(a[name]):
                raise InvalidArgumentType(f"{name} must be callable (got {type(a[name]).__name__})")
        a["stitch"] = _stitch_mode(a["stitch"], a.pop("align_chunks"))
        a["pacer"] = a["pacer"] if a["pacer"] is not None else MonotonicPacer()
        a["episode_id"] = a["episode_id"] or uuid.uuid4().hex
        a["hold_on_underrun"] = a["on_underrun"] is not None and _takes_no_argument(a["on_underrun"])
        a["take_over"] = _take_over(a.get("take_over"), a)
        a["request_budget"] = check_budget(a.get("request_budget"))
        if a["request_budget"] is not None and not a["take_over"]:
            raise InvalidArgument("request_budget needs the newest chunk to take over on arrival (take_over=None or "
                                  "True, with lookahead='auto', prefetch=True and stitch='continue'); "
                                  "the appending rule starts one request per window")
        return cls(instruction=instruction, **a)


def check_max_seconds(max_seconds: Any) -> None:
    """InvalidArgument unless 0 < max_seconds <= MAX_RUN_SECONDS (NaN and infinities fail it)."""
    if not (_is_number(max_seconds) and 0 < max_seconds <= MAX_RUN_SECONDS):
        raise InvalidArgument(f"max_seconds must be a number > 0 and at most {MAX_RUN_SECONDS:g} (a day) "
                              f"(got {max_seconds!r})")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _stitch_mode(stitch: Optional[str], align_chunks: bool) -> str:
    """align_chunks=True is the older spelling of stitch="align"."""
    if stitch is None:
        return "align" if align_chunks else "continue"
    if stitch not in STITCH_MODES:
        raise InvalidArgument(f"stitch must be one of {', '.join(STITCH_MODES)} (got {stitch!r})")
    if align_chunks and stitch != "align":
        raise InvalidArgument(f"align_chunks=True contradicts stitch={stitch!r}; pass one of them")
    return stitch


def _take_over(value: Any, a: Mapping[str, Any]) -> bool:
    """take_over: None (on wherever it can be), True (on, or an error naming what prevents it),
    False (the appending rule: each chunk played after the rows buffered)."""
    if value is not None and not isinstance(value, bool):
        raise InvalidArgument(f"take_over must be True, False or None (got {value!r})")
    against = [f"{name}={a[name]!r}" for name, want in (("lookahead", AUTO), ("prefetch", True), ("stitch", "continue"))
               if a[name] != want]
    if value and against:
        raise InvalidArgument(f"take_over=True needs lookahead='auto', prefetch=True and stitch='continue' "
                              f"(got {', '.join(against)})")
    return not against if value is None else value


def _takes_no_argument(callback: Callable[..., Any]) -> bool:
    """on_underrun comes in two forms. `on_underrun(wait_s)` (WIRE.md §7.8) is told how long a
    stall lasted, when it ends. A callback that takes no argument (the guide's
    `on_underrun=robot.hold_position`) cannot be told a duration: it is a hold, so it is called
    when the buffer runs dry, before the wait, so the arm holds instead of coasting."""
    try:
        signature = inspect.signature(callback)
    except (TypeError, ValueError):  # a builtin without introspection: the documented form
        return False
    try:
        signature.bind(0.0)
        return False
    except TypeError:
        pass
    try:
        signature.bind()
    except TypeError:
        raise InvalidArgumentType("on_underrun must take no argument (a hold) or one: the stall's duration in seconds") from None
    return True
