"""The last check before a command reaches the arm.

Every command is checked here before it is published: finite, inside the joint limits, and no
larger a step (position) or speed (velocity) than the arm allows in one control period. A
failure stops the run and holds; the command is never published.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple

__all__ = ["CommandLimits", "UnsafeCommand", "check_command"]


class UnsafeCommand(Exception):
    """A command that failed the safety check; the message names the joint and the limit."""


@dataclass(frozen=True)
class CommandLimits:
    """What a command may be, per joint in joint_names order: position range, speed, step."""

    joint_names: Tuple[str, ...]
    position_min: Tuple[float, ...]
    position_max: Tuple[float, ...]
    velocity_max: Tuple[float, ...]
    max_step_rad: float


def check_command(
    joints: Sequence[float],
    interface: str,
    limits: CommandLimits,
    previous: Optional[Sequence[float]],
    period_s: float,
) -> None:
    """Raise UnsafeCommand unless `joints` (the arm part of a command) is safe to publish.

    `previous` is the last published position target, or the measured position for the first
    command of a run; `period_s` the control period (a position step may not exceed the speed
    limit times one period, nor max_step_rad)."""
    names = limits.joint_names
    if len(joints) != len(names):
        raise UnsafeCommand(f"command has {len(joints)} joint values; the arm has {len(names)} joints")
    for name, value in zip(names, joints):
        if not math.isfinite(value):
            raise UnsafeCommand(f"{name} command is {value}")
    if interface == "velocity":
        for name, value, top in zip(names, joints, limits.velocity_max):
            if abs(value) > top:
                raise UnsafeCommand(f"{name} velocity {value:+.3f} rad/s exceeds the limit {top:.3f}")
        return
    for name, value, lo, hi in zip(names, joints, limits.position_min, limits.position_max):
        if not lo <= value <= hi:
            raise UnsafeCommand(f"{name} target {value:+.4f} rad is outside [{lo:+.4f}, {hi:+.4f}]")
    if previous is None:
        return
    for name, value, before, top in zip(names, joints, previous, limits.velocity_max):
        step = abs(value - before)
        allowed = min(limits.max_step_rad, top * period_s) if limits.max_step_rad > 0 else top * period_s
        if step > allowed + 1e-9:
            raise UnsafeCommand(f"{name} target jumps {step:.4f} rad in one period (limit {allowed:.4f})")
