"""What a run reports: `RunOutcome` when it ends (docs/PROTOCOL.md §7.13), `RunProgress` while it runs,
and `RunTally`, what the control loop counts as it goes, that both are made from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, Optional

__all__ = ["REASONS", "RunOutcome", "RunProgress", "RunTally", "Spread"]

REASONS = ("completed", "until", "timeout", "interrupted", "validate")  # plus "raised:<Class>"


def _seconds(value: float) -> str:
    """Two decimals, with no "-0.00" for a value that rounds to zero from below."""
    return f"{round(value, 2) + 0.0:.2f}"


@dataclass(frozen=True)
class RunOutcome:
    """How a run() or act() ended. `reason` is one of REASONS or `raised:<ExceptionClass>`."""

    actions: int
    chunks: int
    elapsed_s: float
    reason: str
    underruns: int = 0
    underrun_s: float = 0.0
    episode_resets: int = 0
    max_seam_jump: Optional[float] = None
    action_space: Optional[str] = None
    instruction_swaps: int = 0
    max_instruction_lag_s: Optional[float] = None
    observe_s: float = 0.0
    # run(record=...): camera frames left out of the recording because the disk fell behind
    recording_frames_dropped: int = 0
    # run(record=...): the write error that stopped the recording (a full disk), "" when none
    recording_error: str = ""
    # how old the observation behind each action was when it played, and how long after the moment
    # its row was computed for it played, seconds; None when no action said
    age_p50_s: Optional[float] = None
    age_max_s: Optional[float] = None
    lateness_p50_s: Optional[float] = None
    lateness_max_s: Optional[float] = None

    @property
    def stopped_early(self) -> bool:
        return self.reason != "completed"

    def __str__(self) -> str:
        parts = [f"{self.actions} actions over {self.chunks} chunks in {self.elapsed_s:.1f}s"]
        if self.underruns:
            parts.append(f"{self.underruns} underruns ({self.underrun_s:.2f}s)")
        if self.age_p50_s is not None and self.lateness_p50_s is not None:
            parts.append(f"age p50 {_seconds(self.age_p50_s)}s, late p50 {_seconds(self.lateness_p50_s)}s")
        if self.instruction_swaps:
            lag = self.max_instruction_lag_s or 0.0
            parts.append(f"{self.instruction_swaps} instruction swaps (max lag {lag:.2f}s)")
        if self.recording_frames_dropped:
            parts.append(f"{self.recording_frames_dropped} frames not recorded")
        if self.recording_error:
            parts.append(f"recording stopped ({self.recording_error})")
        parts.append(self.reason)
        return f"RunOutcome({', '.join(parts)})"

    __repr__ = __str__


@dataclass(frozen=True)
class RunProgress:
    """A snapshot of the run in progress, safe to take from any thread (e.g. for ROS feedback)."""

    running: bool = False
    actions: int = 0
    chunks: int = 0
    buffered: int = 0
    elapsed_s: float = 0.0
    underruns: int = 0
    underrun_s: float = 0.0
    instruction: Optional[str] = None
    warming: bool = False
    warming_waited_s: float = 0.0
    warming_eta_s: Optional[float] = None
    refill_latency_s: Optional[float] = None
    age_p50_s: Optional[float] = None
    age_max_s: Optional[float] = None
    lateness_p50_s: Optional[float] = None
    lateness_max_s: Optional[float] = None


class Spread:
    """The median and the largest of a run's per-action figures (seconds), in bounded memory: a
    histogram of 1 ms bins from −1 s to 9 s (a value outside counts in the end bin; the largest is
    kept exactly). Added to on the loop's thread, read from any (a torn read is one action off)."""

    LOW, BIN, BINS = -1.0, 0.001, 10000

    def __init__(self) -> None:
        self._counts: List[int] = [0] * self.BINS
        self.count = 0
        self.largest: Optional[float] = None

    def add(self, value: float) -> None:
        if value != value:  # NaN
            return
        i = min(self.BINS - 1, max(0, int((value - self.LOW) / self.BIN)))
        self._counts[i] += 1
        self.count += 1
        if self.largest is None or value > self.largest:
            self.largest = value

    def median(self) -> Optional[float]:
        """The p50, to the millisecond (the middle of its bin); None before the first value."""
        count = self.count
        if not count:
            return None
        seen, half = 0, (count + 1) // 2
        for i, n in enumerate(self._counts):
            seen += n
            if seen >= half:
                return round(self.LOW + (i + 0.5) * self.BIN, 4)
        return self.largest


class RunTally:
    """One run's counts, kept by the loop on its thread (the action count is the loop's own)."""

    def __init__(self) -> None:
        self.chunks = self.underruns = self.swaps = 0
        self.underrun_s = self.observe_s = 0.0
        self.stalled_at: Optional[float] = None  # the stall in progress began then (monotonic)
        self.max_lag: Optional[float] = None
        self.max_jump: Optional[float] = None
        self.action_space: Optional[str] = None  # of the last installed chunk
        self.instruction: Optional[str] = None  # the one the run's last request carried
        self.age = Spread()
        self.lateness = Spread()

    def played(self, action: Any) -> None:
        """An Action that just played: its age and lateness (rows that do not say are skipped).
        Read from the fields `Action.age_s` and `lateness_s` are made of: once per action."""
        at = getattr(action, "played_at", None)
        if at is None:
            return
        observed, due = getattr(action, "observed_at", None), getattr(action, "due_at", None)
        if observed is not None:
            self.age.add(at - observed)
        if due is not None:
            self.lateness.add(at - due)

    def freshness(self) -> dict:
        return {"age_p50_s": self.age.median(), "age_max_s": self.age.largest,
                "lateness_p50_s": self.lateness.median(), "lateness_max_s": self.lateness.largest}

    def stall_began(self, at: float) -> None:
        self.stalled_at = at

    def underrun(self, wait_s: float) -> None:
        """The stall in progress ended after `wait_s`."""
        self.stalled_at = None
        self.underruns += 1
        self.underrun_s += wait_s

    def held_s(self, now: float) -> float:
        """The run's time held for late chunks until `now`, the stall in progress included."""
        return self.underrun_s + (0.0 if self.stalled_at is None else now - self.stalled_at)

    def seam(self, jump: Optional[float]) -> None:
        if jump is not None:
            self.max_jump = jump if self.max_jump is None else max(self.max_jump, jump)

    def lag(self, lag_s: float) -> None:
        self.max_lag = lag_s if self.max_lag is None else max(self.max_lag, lag_s)

    def outcome(self, reason: str, *, actions: int, elapsed_s: float, episode_resets: int,
                frames_dropped: int) -> RunOutcome:
        return RunOutcome(
            actions=actions, chunks=self.chunks, elapsed_s=elapsed_s, reason=reason, underruns=self.underruns,
            underrun_s=self.underrun_s, episode_resets=episode_resets, max_seam_jump=self.max_jump,
            action_space=self.action_space, instruction_swaps=self.swaps, max_instruction_lag_s=self.max_lag,
            observe_s=self.observe_s, recording_frames_dropped=frames_dropped, **self.freshness(),
        )

    def progress(self, *, running: bool, actions: int, buffered: int, elapsed_s: float, warm: Any,
                 refill_latency_s: Optional[float]) -> RunProgress:
        """`warm`: the run's WarmWait, if it has one (its state is read from this thread)."""
        active = bool(warm and warm.active)
        return RunProgress(
            running=running, actions=actions, chunks=self.chunks, buffered=buffered, elapsed_s=elapsed_s,
            underruns=self.underruns, underrun_s=self.underrun_s, instruction=self.instruction, warming=active,
            warming_waited_s=warm.waited_s if warm and active else 0.0,
            warming_eta_s=warm.eta_s if warm and active else None, refill_latency_s=refill_latency_s,
            **self.freshness(),
        )
