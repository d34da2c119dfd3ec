"""The companion nodes (sequence_ai_ros/companions.py) take the process's ROS arguments but not
its node name."""

from __future__ import annotations

import pytest

from sequence_ai_ros.companions import companion_arguments

pytestmark = pytest.mark.ros


def test_companions_take_the_process_ros_arguments_but_not_its_node_name():
    argv = ["policy_node", "--ros-args", "--log-level", "info", "--ros-args", "-r", "__node:=left_policy",
            "-r", "__ns:=/left_arm", "--params-file", "/tmp/p.yaml", "-r", "joint_states:=/arm/joints",
            "--remap", "left_policy:__node:=x", "-r", "__name:=y", "-p", "use_sim_time:=true", "--", "extra"]
    assert companion_arguments(argv) == [
        "--ros-args", "--log-level", "info", "-r", "__ns:=/left_arm", "--params-file", "/tmp/p.yaml",
        "-r", "joint_states:=/arm/joints", "-p", "use_sim_time:=true",
    ]
    assert companion_arguments(["policy_node"]) == []
