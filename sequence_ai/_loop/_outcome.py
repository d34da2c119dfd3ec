"""What a run reports: `RunOutcome` when it ends (WIRE.md §7.13), `RunProgress` while it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

__all__ = ["REASONS", "RunOutcome", "RunProgress"]

REASONS = ("completed", "until", "timeout", "interrupted", "validate")  # plus "raised:<Class>"


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

    @property
    def stopped_early(self) -> bool:
        return self.reason != "completed"

    def __str__(self) -> str:
        parts = [f"{self.actions} actions over {self.chunks} chunks in {self.elapsed_s:.1f}s"]
        if self.underruns:
            parts.append(f"{self.underruns} underruns ({self.underrun_s:.2f}s)")
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
