"""Waiting out a cold model: the one warm-until-ready wait (docs/PROTOCOL.md §7.5, §7.14, §4.9).

A call that answers "warming" (an `Unavailable` with `warming=True`) is made again after a pause,
until it serves or the budget runs out; any other error ends the wait at once. Every wait for a
cold model goes through `WarmWait`: a run's first fill and `predict()`, `wait_until_ready()`, the
perception calls and `sequence-ai doctor`. They differ only in their pause rule and their sleep.
A Policy sleeps on its `Waiter`, which `interrupt()` ends at once (raising `Interrupted`); a
one-shot call has no handle to interrupt, and Ctrl-C ends its sleep.

Pause rules (`pause(warming_error, budget_s, left_s) -> (sleep_s, eta_s told to on_warming)`,
raising to give up):

* `act_pause` (§7.5): `max(1, retry_after_s or 5)`; a pause that would end past the budget gives
  up at once, naming the budget. on_warming is told the pause.
* `pause_within(default_eta_s, ...)` (§4.9): the eta (`retry_after_s`, else the default) or a
  fixed poll period, at least a floor, cut to the budget left; it gives up with the warming error
  itself once none is left. on_warming is told the eta.
* `poll_every(poll_s)` (§7.14): `pause_within` at a poll period, for a `NotReady` answer only; a
  warming error of the readiness call itself ends the wait as it came.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional, Tuple, TypeVar

from ._console import warn_user
from ._errors import Unavailable

__all__ = ["NotReady", "WarmWait", "act_pause", "eta_of", "pause_within", "poll_every"]

T = TypeVar("T")
OnWarming = Callable[[float, Any], Any]
Pause = Callable[[Unavailable, float, float], Tuple[float, Optional[float]]]


def eta_of(answer: object) -> Optional[float]:
    """The `eta_s` of a /v1/act/ready answer, or None when it has none (or not a number)."""
    eta = answer.get("eta_s") if isinstance(answer, dict) else None
    return float(eta) if isinstance(eta, (int, float)) and not isinstance(eta, bool) else None


def act_pause(exc: Unavailable, budget_s: float, left_s: float) -> Tuple[float, Optional[float]]:
    wait = max(1.0, float(exc.retry_after_s or 5))
    if wait > left_s:
        raise Unavailable(f"{exc.message}; still warming after {budget_s:g}s (startup_timeout_s), giving up",
                          exc.status, exc.body, retry_after_s=exc.retry_after_s, warming=True,
                          job_id=exc.job_id) from None
    return wait, wait


def pause_within(default_eta_s: Optional[float], *, floor_s: float = 1.0, every_s: Optional[float] = None) -> Pause:
    def pause(exc: Unavailable, budget_s: float, left_s: float) -> Tuple[float, Optional[float]]:
        if left_s <= 0:
            raise exc
        eta = None if exc.retry_after_s is None else float(exc.retry_after_s)
        if not eta and default_eta_s is not None:  # none given, or 0: the default (§4.9: `or 20`)
            eta = default_eta_s
        wanted = every_s if every_s is not None else (eta if eta is not None else floor_s)
        return max(floor_s, min(wanted, left_s)), eta

    return pause


class NotReady(Unavailable):
    """A readiness answer that says "not yet" (wait_until_ready); its text is the one to give up with."""


def poll_every(poll_s: float) -> Pause:
    within = pause_within(None, floor_s=0.5, every_s=poll_s)

    def pause(exc: Unavailable, budget_s: float, left_s: float) -> Tuple[float, Optional[float]]:
        if not isinstance(exc, NotReady):
            raise exc
        if left_s <= 0:
            raise Unavailable(exc.message, exc.status, warming=True, retry_after_s=exc.retry_after_s) from None
        return within(exc, budget_s, left_s)

    return pause


class WarmWait:
    """One wait. Its state (`active`, `waited_s`, `eta_s`) is readable from other threads.
    `sleep(seconds)` is the caller's (a Policy's raises Interrupted on interrupt());
    `on_warming(waited_s, eta_s)` is called before each sleep; `warn`: a UserWarning too,
    pointed at the caller's line (run(), predict())."""

    def __init__(self, budget_s: float, sleep: Callable[[float], None], on_warming: Optional[OnWarming] = None, *,
                 pause: Pause = act_pause, warn: bool = False):
        self.budget_s = budget_s
        self._sleep = sleep
        self._on_warming = on_warming
        self._pause = pause
        self._warn = warn
        self.active = False
        self.started: Optional[float] = None
        self.eta_s: Optional[float] = None

    @property
    def waited_s(self) -> float:
        started = self.started
        return 0.0 if started is None else time.monotonic() - started

    def run(self, attempt: Callable[[float], T]) -> Tuple[T, float]:
        """Call `attempt(read_timeout_s)` until it stops answering "warming"; returns its value
        and the seconds since the wait began (the successful attempt included)."""
        self.started = time.monotonic()
        deadline = self.started + self.budget_s
        try:
            while True:
                try:
                    value = attempt(max(1.0, deadline - time.monotonic()))
                except Unavailable as exc:
                    self.handle(exc)
                    continue
                return value, self.waited_s
        finally:
            self.active = False

    def handle(self, exc: Unavailable) -> None:
        """Decide on one warming answer: sleep it out, or give up by raising."""
        if not exc.warming:
            raise exc
        self.active = True
        waited = self.waited_s
        sleep_s, self.eta_s = self._pause(exc, self.budget_s, self.budget_s - waited)
        if self._on_warming is not None:
            self._on_warming(waited, self.eta_s)
        if self._warn:
            warn_user(f"model is warming: {exc.message}; retrying in {sleep_s:.0f}s")
        self._sleep(sleep_s)
