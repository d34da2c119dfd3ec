"""sequence_ai.sim.SimulatedArm: the ROS sim_robot's kinematics for plain Python, driven by the
catalogue rows of the local platform."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

from sequence_ai import InvalidArgument, InvalidRequest, Model, Observation, models
from sequence_ai.sim import DQ_MAX, HOME, Q_MAX, SimulatedArm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def arm(platform):
    return SimulatedArm("pi05-droid", base_url=platform.base_url)


def test_velocity_rows_move_each_joint_one_control_period(arm):
    row = [0.3, -0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    arm.apply_action(row)
    period = 1 / 15
    assert arm.positions[0] == pytest.approx(HOME[0] + 0.3 * period)
    assert arm.positions[1] == pytest.approx(HOME[1] - 0.3 * period)
    assert arm.positions[2:] == pytest.approx(list(HOME[2:]))


def test_joints_stop_at_their_limits_and_the_gripper_moves_at_its_speed(arm):
    for _ in range(200):
        arm.apply_action([1.0, 0, 0, 0, 0, 0, 0, 1.0])  # joint 1 at the clip, gripper closing
    assert arm.positions[0] == pytest.approx(Q_MAX[0])
    assert arm.gripper == 1.0
    fresh = SimulatedArm("pi05-droid", base_url=arm._base_url)
    fresh.apply_action([0.0] * 7 + [0.9])
    assert 0 < fresh.gripper < 1  # rate limited: the hand does not teleport shut


def test_target_rows_are_approached_at_the_speed_limit(platform):
    arm = SimulatedArm("cosmos3-edge-policy-droid", base_url=platform.base_url)
    target = list(HOME)
    target[0] = 1.0
    arm.apply_action([*target, 0.0])
    assert arm.positions[0] == pytest.approx(DQ_MAX[0] / 15)


def test_hold_and_hold_position_stop_the_arm_where_it_is(arm):
    arm.apply_action([0.5] * 7 + [0.0])
    arm.hold_position(0.2)  # an underrun: never coast on the last velocity
    where = list(arm.positions)
    arm._step(arm.period_s)
    assert arm.positions == where
    arm.hold()
    assert arm.holds == 1 and arm.positions == where


@pytest.mark.parametrize("row, why", [
    ([0.0] * 7, "7 values"),
    ([math.nan] + [0.0] * 7, "non-finite"),
    ([3.0] + [0.0] * 7, "velocity above the limit of joint(s) [0]"),
])
def test_is_safe_refuses_what_the_arm_cannot_do(arm, row, why):
    assert arm.is_safe(row) is False and why in arm.unsafe_reason
    assert arm.is_safe([0.1] * 8) and arm.unsafe_reason == ""


def test_observation_carries_every_declared_view_and_the_state(arm):
    obs = arm.read_observation()
    assert isinstance(obs, Observation)
    assert [frame.view for frame in obs.images] == ["exterior_1", "wrist_left"]
    assert obs.proprioception.joint_positions == list(HOME) and obs.proprioception.gripper == [0.0]
    assert obs.instruction == "pick up the cup"


def test_a_model_the_arm_cannot_be_is_refused(platform):
    pi05 = {m.short_id: m for m in models("act", base_url=platform.base_url)}["pi05-droid"]
    six_joints = Model.from_wire({**pi05.raw, "state_layout": {"joint_positions": 6, "gripper": 1}})
    with pytest.raises(InvalidArgument, match="7 joints and one gripper"):
        SimulatedArm(six_joints).read_observation()
    ee_rows = Model.from_wire({**pi05.raw, "action_space": "ee_delta", "action_semantics": {"rows": "ee_delta"}})
    with pytest.raises(InvalidArgument, match="ee_delta"):
        SimulatedArm(ee_rows).apply_action([0.0] * 8)
    with pytest.raises(InvalidRequest, match="decide"):
        SimulatedArm("jev", base_url=platform.base_url).read_observation()


def test_the_simulated_arm_imports_no_ros():
    probe = subprocess.run([sys.executable, "-c", "import sys, sequence_ai.sim; print(sorted(m for m in sys.modules "
                            "if m.split('.')[0] in ('rclpy', 'sequence_ai_ros', 'cv2')))"],
                           capture_output=True, text=True, cwd=ROOT, check=True)
    assert probe.stdout.strip() == "[]"
