"""The stand-in whose goal moves (`policies.sweeping`): a benchmark on the same host can tell where
its goal is at any moment, and its rows head for where the goal was when the request came."""

from __future__ import annotations

import math

import pytest

from sequence_ai.platform.observation import LazyImages, PolicyInput
from sequence_ai.platform.policies import (
    MAX_SPEED_RAD_S,
    SWEEP_AMPLITUDE_RAD,
    SWEEP_PERIOD_S,
    instruction_goal,
    stand_in,
    sweep_goal,
    sweeping,
)

HZ = 15.0
INSTRUCTION = "put the red block in the bowl"
ROW = {"action_space": "joint_absolute", "action_horizon": 15, "control_hz": HZ}


def policy_input(joints, space: str = "joint_absolute") -> PolicyInput:
    return PolicyInput(images=LazyImages({}), joint_positions=list(joints), gripper=[0.0], instruction=INSTRUCTION,
                       seed=None, model={**ROW, "action_space": space})


def test_the_goal_sweeps_around_the_instructions_goal_with_its_period():
    centre = instruction_goal(INSTRUCTION)
    assert sweep_goal(INSTRUCTION, 0.0) == pytest.approx(centre)
    quarter = sweep_goal(INSTRUCTION, SWEEP_PERIOD_S / 4)
    assert [q - c for q, c in zip(quarter, centre)] == pytest.approx([SWEEP_AMPLITUDE_RAD] * 7)
    assert sweep_goal(INSTRUCTION, 1234.5) == pytest.approx(sweep_goal(INSTRUCTION, 1234.5 + SWEEP_PERIOD_S))
    assert 2 * math.pi * SWEEP_AMPLITUDE_RAD / SWEEP_PERIOD_S < MAX_SPEED_RAD_S  # an arm can keep up


def test_the_rows_head_for_where_the_goal_is_when_the_request_comes_not_where_it_goes():
    at = 1000.3
    goal = sweep_goal(INSTRUCTION, at)
    start = [g - 0.05 for g in goal]
    rows = sweeping(policy_input(start), observed_at=at)
    for j in range(7):  # most of the distance closed within the chunk, never past the goal it saw
        path = [row[j] for row in rows]
        assert all(p <= goal[j] + 1e-12 for p in path) and goal[j] - path[-1] < 0.05 * 0.01
    later = sweeping(policy_input(start), observed_at=at + SWEEP_PERIOD_S / 4)
    assert abs(later[-1][0] - rows[-1][0]) > 0.1  # a quarter period on, the goal is elsewhere


def test_displacement_rows_are_relative_to_the_observed_joints_and_the_fixed_goal_is_unchanged():
    at = 1000.3
    start = [g - 0.05 for g in sweep_goal(INSTRUCTION, at)]
    absolute = sweeping(policy_input(start), observed_at=at)
    delta = sweeping(policy_input(start, "joint_delta"), observed_at=at)
    assert [q + d for q, d in zip(start, delta[3][:7])] == pytest.approx(absolute[3][:7])
    fixed = stand_in(policy_input([0.0] * 7))
    assert all(abs(b - a) <= MAX_SPEED_RAD_S / HZ + 1e-12 for r0, r1 in zip(fixed, fixed[1:])
               for a, b in zip(r0[:7], r1[:7]))
