"""Joint states and the latest sample of a topic (sequence_ai_ros/inputs/samples.py): joints picked
by name, bad joint states refused naming why, a missing or stale sample reported."""

from __future__ import annotations

import math

import pytest

from sequence_ai_ros.inputs.samples import BadInput, LatestSample, StaleInput, read_joints

pytestmark = pytest.mark.ros


class _Joints:
    def __init__(self, name, position):
        self.name, self.position = name, position


def test_joint_states_are_reordered_by_name():
    names = ["b", "gripper", "a"]
    reading = read_joints(_Joints(names, [2.0, 0.04, 1.0]), ["a", "b"], "gripper")
    assert reading.positions == (1.0, 2.0) and reading.gripper == 0.04


@pytest.mark.parametrize("names,positions,why", [
    (["a"], [1.0], "lacks b"),
    (["a", "b", "gripper"], [1.0, math.nan, 0.0], "b = nan"),
    (["a", "b"], [1.0, 2.0], "lacks the gripper joint"),
    (["a", "b", "gripper"], [1.0, 2.0], "3 names but 2 positions"),
])
def test_bad_joint_states_are_refused(names, positions, why):
    with pytest.raises(BadInput, match=why):
        read_joints(_Joints(names, positions), ["a", "b"], "gripper")


def test_latest_sample_reports_missing_and_stale_input():
    now = [100.0]
    sample = LatestSample("/cam", 0.5, lambda: now[0])
    with pytest.raises(StaleInput, match="no message received on /cam"):
        sample.fresh()
    sample.store("frame")
    now[0] += 0.4
    assert sample.fresh() == "frame"
    now[0] += 0.2
    with pytest.raises(StaleInput, match="stale"):
        sample.fresh()
