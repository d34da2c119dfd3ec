"""The arm as the control loop sees it (sequence_ai_ros/control/arm.py), on a real command topic:
act() publishes only the command validate() checked, tick() never lets a velocity controller coast,
and record_to() puts every command published into the goal's recording."""

from __future__ import annotations

import dataclasses
import time

import pytest
from eventually import wait_until
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from sequence_ai._catalogue._models import lookup
from sequence_ai_ros import parameters
from sequence_ai_ros.control.arm import ArmLoop
from sequence_ai_ros.control.commands import CommandMapping, CommandPublisher
from sequence_ai_ros.inputs.samples import LatestSample, joint_check
from sequence_ai_ros.qos import COMMANDS
from sequence_ai_ros.spinning import Spinning

pytestmark = pytest.mark.ros
HOME = [0.0, -0.5, 0.0, -2.2, 0.0, 1.8, 0.8]


class _Row(list):
    """A row as run() hands it to validate and act: the values, the chunk, and the joint state its
    chunk was computed from (q_ref)."""

    def __init__(self, values, q_ref, chunk=1):
        super().__init__(values)
        self.q_ref, self.chunk = q_ref, chunk


@pytest.fixture
def arm_on(platform):
    """arm_on(**config) -> (ArmLoop, mapping, the commands published so far) on a spun node."""
    with Spinning() as spun:
        def make(**changes):
            node = spun.create_node("arm_loop_parts")
            parameters.declare(node)
            config = dataclasses.replace(parameters.read(node), **changes)
            model = lookup("pi05-droid", base_url=platform.base_url, api_key=platform.api_key)
            mapping = CommandMapping(model, config)
            joint_states = LatestSample("joint_states", 5.0, time.monotonic,
                                        check=joint_check(config.joint_names, config.gripper_joint))
            joint_states.store(JointState(name=[*config.joint_names, config.gripper_joint], position=[*HOME, 0.04]))
            published = []
            node.create_subscription(Float64MultiArray, config.command_topic,
                                     lambda m: published.append(list(m.data)),
                                     QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
            arm = ArmLoop(config, model, mapping, CommandPublisher(node, config, COMMANDS, lambda _: None),
                          joint_states, {}, lambda: 1 / 15, lambda _: None)
            spun.spin([node])
            return arm, mapping, published

        yield make


def test_act_publishes_the_command_validate_checked_for_that_very_row_and_no_other(arm_on):
    arm, mapping, published = arm_on()
    checked = _Row([0.01] * 7 + [0.0], q_ref=HOME)
    other = _Row([0.02] * 7 + [0.0], q_ref=HOME)
    assert arm.validate(checked)
    with pytest.raises(RuntimeError, match="did not pass"):
        arm.act(other)  # never published: it was not the row checked
    assert arm.validate(checked)
    arm.act(checked)
    expected = mapping.command(checked, HOME)
    assert wait_until(lambda: published, 10.0), "the validated command was never published"
    assert len(published) == 1 and published[0][:7] == pytest.approx(list(expected.joints)), \
        f"published {published}, not the checked command {expected}"
    with pytest.raises(RuntimeError):
        arm.act(checked)  # validated once, published once


def test_a_velocity_arm_never_coasts_a_tick_a_run_published_nothing_in_gets_a_zero(arm_on):
    arm, _, published = arm_on(command_interface="velocity")
    arm.tick(running=True, command_waiting=False)  # no command yet: nothing to stop
    row = _Row([0.1] * 7 + [0.0], q_ref=HOME)
    assert arm.validate(row)
    arm.act(row)
    arm.tick(running=True, command_waiting=False)  # a command went out in this period
    assert wait_until(lambda: len(published) >= 1, 10.0)
    arm.tick(running=True, command_waiting=False)  # nothing in this one: zero velocity
    assert wait_until(lambda: len(published) >= 2, 10.0), "a dry period left the arm coasting"
    arm.tick(running=True, command_waiting=True)  # a command waits for this tick: it follows at once
    arm.tick(running=False, command_waiting=False)  # after the run's hold: silence
    assert arm.validate(row)
    arm.act(row)  # a marker: everything published before it has arrived once it has
    assert wait_until(lambda: len(published) >= 3, 10.0)
    assert len(published) == 3, published
    assert published[0][:7] == pytest.approx([0.1] * 7) and published[1][:7] == [0.0] * 7


def test_a_position_arm_publishes_nothing_on_its_own_at_a_tick(arm_on):
    arm, _, published = arm_on()
    row = _Row([0.01] * 7 + [0.0], q_ref=HOME)
    assert arm.validate(row)
    arm.act(row)
    for _ in range(3):
        arm.tick(running=True, command_waiting=False)
    assert arm.validate(row)
    arm.act(row)
    assert wait_until(lambda: len(published) >= 2, 10.0)
    assert len(published) == 2, published


def test_record_to_puts_each_command_and_hold_published_into_the_recording_until_none(arm_on, tmp_path):
    recording = pytest.importorskip("sequence_ai.recording")
    pytest.importorskip("mcap", reason="recording needs the [record] extra")
    arm, mapping, published = arm_on()
    row = _Row([0.01] * 7 + [0.0], q_ref=HOME)
    with recording.Recorder(tmp_path / "goal.mcap") as recorder:
        arm.record_to(recorder)
        assert arm.validate(row)
        arm.act(row)
        arm.hold()
        arm.record_to(None)
        arm.hold()  # after the goal: not in its file
    assert wait_until(lambda: len(published) >= 3, 10.0)
    commands = recording.read_run(tmp_path / "goal.mcap").arm_commands
    assert len(commands) == 2, commands
    assert list(commands[0].position)[:7] == pytest.approx(list(mapping.command(row, HOME).joints))
    assert list(commands[1].position)[:7] == pytest.approx(HOME), "the hold: where the arm is"
