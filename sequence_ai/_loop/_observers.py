"""What a run tells the parts that watch it: the caller's callbacks and the recording.

The control loop announces its moments to a list of `RunObserver`s, in order, on the driving
thread (`instruction()` comes from the thread that called set_instruction()). An observer
overrides the moments it cares about; `Observers` hands the loop, for each moment, one callable
that reaches only those, so a moment nobody watches costs the loop one empty call, and the
per-action `played` not even that (`watching()`: the loop's wake-up on every tick is most of its
CPU, and every line it runs after one costs several times its warm price). The observers are
`Callbacks` (run()'s on_status, on_chunk, on_underrun) and `recording.run.RunRecording`
(run(record=...)). An observer that raises ends the run like any callback; the recording
catches its own errors.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence

from ._settings import RunSettings

__all__ = ["MOMENTS", "Callbacks", "Observers", "RunObserver"]


class RunObserver:
    """The moments of one run. Every method here does nothing."""

    frames_dropped = 0  # camera frames it left out (the recording's, when the disk fell behind)

    def started(self, *, model: str, episode_id: str, control_hz: Optional[float],
                instruction: Optional[str]) -> None:
        """The run begins."""

    def status(self, text: str) -> None:
        """`starting`, `running` (after the first action and every stall), `waiting`, `done`."""

    def sent(self, flight: Any) -> None:
        """A request went out (`_refill.InFlight`: its observation, instruction, times)."""

    def answered(self, flight: Any, prediction: Any, rows: Sequence[Any]) -> None:
        """The answer to `flight` was installed: `rows` are the stitched rows to play."""

    def failed(self, flight: Any, error: BaseException) -> None:
        """The request `flight` failed (the loop retries or ends the run)."""

    def played(self, action: Any) -> None:
        """`action` went to act()."""

    def stalled(self) -> None:
        """The buffer ran dry while the arm moved and the next chunk is not here: hold."""

    def resumed(self, wait_s: float) -> None:
        """That stall ended after `wait_s` (an underrun)."""

    def held(self, reason: str) -> None:
        """The run's ending hold went out (hold() returned)."""

    def instruction(self, text: str) -> None:
        """set_instruction() changed the instruction while the run goes."""

    def ended(self, outcome: Any, *, held: bool) -> Any:
        """The run's outcome; `held`: its ending hold went out. Returns the outcome with what
        this observer kept added (the recording: its write error), or None: as it is."""


MOMENTS = ("started", "status", "sent", "answered", "failed", "played", "stalled", "resumed", "held",
           "instruction")  # and `ended`, which may amend the outcome (Observers.ended)


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _overrides(observer: RunObserver, moment: str) -> bool:
    hook = getattr(observer, moment)
    return getattr(hook, "__func__", hook) is not getattr(RunObserver, moment)


class Observers:
    """The observers of one run: an attribute per moment (MOMENTS), calling each observer that
    watches it, in order."""

    def __init__(self, observers: Sequence[RunObserver]):
        self.observers = tuple(observers)
        self._watched = set()
        for moment in MOMENTS:
            hooks = [getattr(o, moment) for o in self.observers if _overrides(o, moment)]
            if hooks:
                self._watched.add(moment)
            setattr(self, moment, _nothing if not hooks else hooks[0] if len(hooks) == 1 else _each(hooks))
        self._ended = [o.ended for o in self.observers if _overrides(o, "ended")]

    def ended(self, outcome: Any, *, held: bool) -> Any:
        """The run's outcome, as each observer that watches the end amends it."""
        for hook in self._ended:
            outcome = hook(outcome, held=held) or outcome
        return outcome

    def watching(self, moment: str) -> bool:
        return moment in self._watched

    @property
    def frames_dropped(self) -> int:
        return sum(o.frames_dropped for o in self.observers)


def _each(hooks: Sequence[Callable[..., Any]]) -> Callable[..., None]:
    def each(*args: Any, **kwargs: Any) -> None:
        for hook in hooks:
            hook(*args, **kwargs)

    return each


class Callbacks(RunObserver):
    """run()'s callbacks; only those given are hooked. on_underrun comes in two forms
    (`RunSettings.hold_on_underrun`): a hold when a stall begins, or told its length when it ends."""

    def __init__(self, settings: RunSettings):
        if settings.on_status is not None:
            self.status = settings.on_status  # type: ignore[method-assign]
        on_chunk = settings.on_chunk
        if on_chunk is not None:
            def answered(flight: Any, prediction: Any, rows: Sequence[Any]) -> None:
                on_chunk(dataclasses.replace(prediction.action_chunk, observation=flight.observation))

            self.answered = answered  # type: ignore[method-assign]
        if settings.on_underrun is not None:
            if settings.hold_on_underrun:
                self.stalled = settings.on_underrun  # type: ignore[method-assign]
            else:
                self.resumed = settings.on_underrun  # type: ignore[method-assign]

    @classmethod
    def given(cls, settings: RunSettings) -> Optional[Callbacks]:
        """The callbacks of `settings`, or None when it has none."""
        if settings.on_status is None and settings.on_chunk is None and settings.on_underrun is None:
            return None
        return cls(settings)
