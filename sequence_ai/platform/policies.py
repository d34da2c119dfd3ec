"""Stand-in policies: what the local worker answers instead of a real VLA.

Each row's stand-in starts from the observed joints and moves toward a goal that is a hash of the
instruction (inside the Franka's joint limits), so changing the instruction visibly changes the
motion. It is deterministic for (observation, instruction, seed), smooth (a speed-limited first
order approach) and bounded (limits, ≤ 0.4 rad/s per joint). The gripper closes for pick/grasp-like
instructions and opens otherwise, ramping at a finite rate. Nothing here looks at the pixels.

`sweeping` is the stand-in whose goal moves: the instruction's goal swept back and forth by a slow
sine of the wall clock (`sweep_goal`), which a benchmark on the same host can follow to measure how
closely an arm tracks it. Like a policy that sees a target in one frame, it knows where the goal is
when the request comes, not where it is going, and heads there stiffly (SWEEP_GAIN_PER_S), so how
far the arm trails the goal is set by how old the observation behind each row is. Choose it like
any policy: `sequence-ai serve --policy sequence_ai.platform.policies:sweeping`.
"""

from __future__ import annotations

import hashlib
import math
import struct
import time
from typing import List, Optional, Sequence

from .observation import PolicyInput

# Franka Panda joint limits (rad), from the robot's datasheet.
Q_MIN = (-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973)
Q_MAX = (2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973)
MAX_SPEED_RAD_S = 0.4
APPROACH_GAIN_PER_S = 1.5
GRIPPER_RATE_PER_S = 2.0
SWEEP_PERIOD_S = 12.0  # the sweeping goal: every joint ±SWEEP_AMPLITUDE_RAD around the instruction's goal,
SWEEP_AMPLITUDE_RAD = 0.3  # at most 0.16 rad/s: well inside the stand-in's speed limit
# The sweeping stand-in's approach: stiff, so the arm trails the goal by the observation's age more
# than by its own lag (1/gain); still stable and smooth at 15 Hz (gain/hz = 0.4).
SWEEP_GAIN_PER_S = 6.0
_CLOSING_WORDS = ("pick", "grasp", "grab", "close", "hold", "lift")


def _unit_floats(text: str, n: int) -> List[float]:
    """n numbers in [0, 1) from a hash of `text`."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    while len(digest) < 4 * n:
        digest += hashlib.sha256(digest).digest()
    return [v / 2**32 for v in struct.unpack(f">{n}I", digest[: 4 * n])]


def instruction_goal(instruction: str, seed: int | None = None) -> List[float]:
    """The joint-space goal an instruction maps to: inside the middle 60 % of each joint's range,
    nudged by up to ±0.05 rad per seed so a seed changes the answer but not its character."""
    goal = [lo + (0.2 + 0.6 * u) * (hi - lo) for lo, hi, u in zip(Q_MIN, Q_MAX, _unit_floats(instruction.strip().lower(), 7))]
    if seed is not None:
        goal = [g + 0.1 * (u - 0.5) for g, u in zip(goal, _unit_floats(f"seed:{seed}", 7))]
    return goal


def gripper_goal(instruction: str) -> float:
    text = instruction.lower()
    return 1.0 if any(word in text for word in _CLOSING_WORDS) else 0.0


def sweep_goal(instruction: str, t: float, seed: int | None = None) -> List[float]:
    """The sweeping stand-in's goal at wall-clock time `t` (time.time()): the instruction's goal
    moved by SWEEP_AMPLITUDE_RAD·sin(2πt/SWEEP_PERIOD_S) on every joint, inside the joint limits."""
    offset = SWEEP_AMPLITUDE_RAD * math.sin(2.0 * math.pi * t / SWEEP_PERIOD_S)
    return [min(max(g + offset, lo), hi) for g, lo, hi in zip(instruction_goal(instruction, seed), Q_MIN, Q_MAX)]


def trajectory(start: Sequence[float], grip: float, inp: PolicyInput, horizon: int, hz: float,
               goal: Optional[Sequence[float]] = None, gain: float = APPROACH_GAIN_PER_S) -> List[List[float]]:
    """`horizon` future joint positions + gripper, one control period apart, toward `goal`
    (default: the instruction's)."""
    dt = 1.0 / hz
    goal = instruction_goal(inp.instruction, inp.seed) if goal is None else goal
    g_goal = gripper_goal(inp.instruction)
    q = [min(max(v, lo), hi) for v, lo, hi in zip(start, Q_MIN, Q_MAX)]
    rows: List[List[float]] = []
    for _ in range(horizon):
        step_max = MAX_SPEED_RAD_S * dt
        q = [qi + max(-step_max, min(step_max, gain * (gi - qi) * dt)) for qi, gi in zip(q, goal)]
        grip += max(-GRIPPER_RATE_PER_S * dt, min(GRIPPER_RATE_PER_S * dt, g_goal - grip))
        rows.append([*q, min(1.0, max(0.0, grip))])
    return rows


def _start(inp: PolicyInput) -> tuple:
    joints = list(inp.joint_positions[:7]) + [0.0] * max(0, 7 - len(inp.joint_positions))
    grip = float(inp.gripper[0]) if inp.gripper else 0.0
    return joints, min(1.0, max(0.0, grip))


def joint_delta(inp: PolicyInput, *, goal: Optional[Sequence[float]] = None,
                gain: float = APPROACH_GAIN_PER_S) -> List[List[float]]:
    """Rows are cumulative displacements from the observed joints (row i = q_i − q_obs), gripper
    absolute; clipped to the row's declared [-1, 1]."""
    joints, grip = _start(inp)
    row = inp.model
    rows = trajectory(joints, grip, inp, int(row["action_horizon"]), float(row["control_hz"]), goal, gain)
    return [[max(-1.0, min(1.0, q - q0)) for q, q0 in zip(r[:7], joints)] + [r[7]] for r in rows]


def joint_absolute(inp: PolicyInput, *, goal: Optional[Sequence[float]] = None,
                   gain: float = APPROACH_GAIN_PER_S) -> List[List[float]]:
    """Rows are absolute joint targets plus the gripper."""
    joints, grip = _start(inp)
    row = inp.model
    return trajectory(joints, grip, inp, int(row["action_horizon"]), float(row["control_hz"]), goal, gain)


def stand_in(inp: PolicyInput, *, goal: Optional[Sequence[float]] = None,
             gain: float = APPROACH_GAIN_PER_S) -> List[List[float]]:
    """The stand-in for whatever action space the row declares (toward `goal`, default the
    instruction's)."""
    space = inp.model.get("action_space")
    if space == "joint_delta":
        return joint_delta(inp, goal=goal, gain=gain)
    if space == "joint_absolute":
        return joint_absolute(inp, goal=goal, gain=gain)
    raise ValueError(f"no stand-in policy for action space {space!r}")


def sweeping(inp: PolicyInput, observed_at: Optional[float] = None) -> List[List[float]]:
    """The stand-in toward the sweeping goal (`sweep_goal`) where it is at `observed_at` (wall clock;
    default now, when the request arrives)."""
    at = time.time() if observed_at is None else observed_at
    return stand_in(inp, goal=sweep_goal(inp.instruction, at, inp.seed), gain=SWEEP_GAIN_PER_S)
