"""The arguments of one run(), checked once and frozen (docs/PROTOCOL.md §7.1).

`Policy.run()` is the only place the parameters and their defaults are written; it hands its
arguments here as a mapping and the control loop reads this object. Everything derived from
them (how `on_underrun` is called, the stitch mode, the pacer) is resolved here too, so the
loop never re-interprets an argument.
"""

from __future__ import annotations

import inspect
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

from .._errors import InvalidArgument, InvalidArgumentType
from ._budget import check_budget
from ._instruction import check_instruction
from ._pacing import MonotonicPacer, Pacer
from ._stitch import STITCH_MODES

__all__ = ["AUTO", "CONTROL_HZ_RANGE", "MAX_RUN_ACTIONS", "MAX_RUN_SECONDS", "RunSettings", "check_max_seconds"]

AUTO = "auto"  # lookahead: as many requests in flight as the latency needs
# The longest max_seconds a run takes: a day is no single run, and far above it the loop's own
# arithmetic overflows (1e308 s: act()'s action bound; 1e300 s: a wait's timeout).
MAX_RUN_SECONDS = 86400.0
# Every other number run() takes is bounded too, so no value reaches the loop's arithmetic where it
# would overflow or divide by (almost) zero: 5e-324 requests a second made a 1/budget of inf, a
# control_hz of 1e-300 a wait past the end of time_t, 10**400 actions no float at all.
MAX_RUN_ACTIONS = 2**53  # counts above it are not exact in the floats the loop's arithmetic makes of them
CONTROL_HZ_RANGE = (0.01, 10_000.0)  # a period from 100 s down to 0.1 ms
REQUEST_BUDGET_RANGE = (1.0 / MAX_RUN_SECONDS, 1000.0)  # requests per second: one a day up to 1000
MAX_ROWS = 10_000  # open_loop_horizon, smooth_seam: rows of one chunk (11 minutes at 15 Hz)
MAX_LOOKAHEAD = 100  # chunks buffered or in flight

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
        _check_int("max_actions", a["max_actions"], 1, MAX_RUN_ACTIONS)
        if a["lookahead"] != AUTO:
            _check_int("lookahead", a["lookahead"], 1, MAX_LOOKAHEAD, f" or {AUTO!r}")
        _check_int("smooth_seam", a["smooth_seam"], 0, MAX_ROWS)
        if a["max_seconds"] is not None:
            check_max_seconds(a["max_seconds"])
        if a["open_loop_horizon"] is not None:
            _check_int("open_loop_horizon", a["open_loop_horizon"], 1, MAX_ROWS)
        if a["control_hz"] is not None:
            _check_number("control_hz", a["control_hz"], *CONTROL_HZ_RANGE, " Hz")
        _check_number("startup_timeout_s", a["startup_timeout_s"], 0.0, MAX_RUN_SECONDS, " s (0: no wait)")
        if _is_number(a.get("request_budget")):  # its type and sign: check_budget below
            _check_number("request_budget", a["request_budget"], *REQUEST_BUDGET_RANGE, " requests per second")
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


def _check_int(name: str, value: Any, low: int, high: int, alternative: str = "") -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidArgument(f"{name} must be an int from {low} to {high:,}{alternative} (got {value!r})")


def _check_number(name: str, value: Any, low: float, high: float, unit: str) -> None:
    """InvalidArgument unless low <= value <= high (NaN, infinities and ints too large for a float fail it)."""
    if not (_is_number(value) and low <= value <= high):
        raise InvalidArgument(f"{name} must be a number from {low:g} to {high:g}{unit} (got {value!r})")


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
    """on_underrun comes in two forms. `on_underrun(wait_s)` (docs/PROTOCOL.md §7.8) is told how long a
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
