"""Malformed inputs to the node, over real topics: images it cannot read and joint states it
cannot trust end the goal `bad_input` before anything is acted (the outcome and the node's log
say which input and why) and show on /diagnostics as an error even with no goal running; joint states it can read whatever their order or extra joints drive
the arm normally.

One node serves every case; a case replaces the arm double's good messages on one topic with its
own for the duration of one goal.
"""

from __future__ import annotations

import math
import os
import sys
import time
from typing import Callable, List

import pytest

pytest.importorskip("rclpy", reason="rclpy not importable: run through scripts/workspace.sh")
sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "ros"))

from _ros_goals import GoalRun
from ros_harness import JOINTS, PolicyNodeFactory, RosHarness, start_arm, wait_for
from sensor_msgs.msg import Image, JointState
from sequence_ai_ros.action import Act

pytestmark = [pytest.mark.ros, pytest.mark.slow]

WIDTH, HEIGHT = 640, 360
GRIPPER = "fr3_finger_joint1"


@pytest.fixture(scope="module")
def node_under_test(local_platform, tmp_path_factory):
    harness = RosHarness()
    factory = PolicyNodeFactory(tmp_path_factory.mktemp("ros_inputs"))
    try:
        local_platform.reset()
        process, arm, planner = start_arm(harness, factory, local_platform)
        yield harness, process, arm, planner
    finally:
        factory.stop_all()
        harness.close()


def _replacing(harness, publisher, make: Callable[[], object], period_s: float):
    timer = harness.node.create_timer(period_s, lambda: publisher.publish(make()))
    time.sleep(0.4)  # several of ours have arrived: they are the latest sample now
    return timer


def _stop(harness, timer) -> None:
    timer.cancel()  # at once, even while the executor waits on it; destroying alone may lag
    harness.node.destroy_timer(timer)


def _goal(harness, planner, arm, max_actions: int):
    sent = time.monotonic()
    response = GoalRun(harness.node, planner, "pick up the cup", max_seconds=10.0, max_actions=max_actions).wait(30)
    # every command the outcome counts, and the hold: this process may receive them late
    return response, [v for _, v in arm.settled_commands(response.result.outcome.actions + 1, since=sent)]


def _image(encoding="rgb8", step=WIDTH * 3, size=WIDTH * 3 * HEIGHT) -> Callable[[], Image]:
    data = bytes(size)
    return lambda: Image(height=HEIGHT, width=WIDTH, encoding=encoding, step=step, data=data)


BAD_IMAGES = {
    "wrong_step": (_image(step=WIDTH * 3 - 1), "step"),
    "truncated_data": (_image(size=WIDTH * 3 * HEIGHT // 2), "bytes"),
    "unknown_encoding": (_image(encoding="yuv422_weird"), "yuv422_weird"),
}


@pytest.mark.parametrize("defect", list(BAD_IMAGES))
def test_a_malformed_image_ends_the_goal_bad_input_before_any_action(node_under_test, defect):
    harness, process, arm, planner = node_under_test
    make, named = BAD_IMAGES[defect]
    topic = f"{arm.ns}/cameras/wrist_left/image_raw"
    arm.silent_views.add("wrist_left")
    timer = _replacing(harness, arm.image_pubs["wrist_left"], make, 1 / 15)
    try:
        response, commands = _goal(harness, planner, arm, max_actions=10)
    finally:
        _stop(harness, timer)
        arm.silent_views.discard("wrist_left")
    result = response.result
    assert response.status == 6 and result.status == Act.Result.STATUS_STALE_INPUT
    assert result.outcome.reason == "bad_input" and result.outcome.actions == 0 and result.outcome.held
    assert "wrist_left" in result.message and named in result.message, result.message
    assert planner.outcomes[-1].reason == "bad_input"
    assert len(commands) == 1, f"only the hold may be published, got {len(commands)} commands"
    assert commands[0][:7] == pytest.approx(arm.q.tolist(), abs=1e-9), "the hold is where the arm is"
    assert wait_for(lambda: f"bad_input: {topic}" in process.output(), 3.0), "the node did not log why"


def test_a_malformed_image_is_reported_on_diagnostics_before_any_goal(node_under_test):
    harness, process, arm, planner = node_under_test
    make, named = BAD_IMAGES["unknown_encoding"]
    topic = f"{arm.ns}/cameras/wrist_left/image_raw"
    arm.silent_views.add("wrist_left")
    timer = _replacing(harness, arm.image_pubs["wrist_left"], make, 1 / 15)
    try:
        def reported() -> bool:
            status = planner.diagnostics
            return status is not None and status.level == b"\x02" and topic in status.message
        assert wait_for(reported, 5.0), planner.diagnostics
        values = {kv.key: kv.value for kv in planner.diagnostics.values}
        assert named in planner.diagnostics.message and named in values["bad_input"]
    finally:
        _stop(harness, timer)
        arm.silent_views.discard("wrist_left")
    assert wait_for(lambda: planner.diagnostics.level == b"\x00", 5.0), "good frames again: back to OK"


def _joints(names: List[str], positions: Callable[[], List[float]]) -> Callable[[], JointState]:
    return lambda: JointState(name=names, position=positions())


def _with_gripper(arm) -> List[float]:
    return [*arm.q.tolist(), arm.gripper]


BAD_JOINTS = {
    "missing_joint": (lambda arm: _joints([*JOINTS[:3], *JOINTS[4:], GRIPPER],
                                          lambda: [*arm.q[:3], *arm.q[4:], arm.gripper]), "fr3_joint4"),
    "nan_position": (lambda arm: _joints([*JOINTS, GRIPPER],
                                         lambda: [*arm.q[:2], math.nan, *arm.q[3:], arm.gripper]), "nan"),
    "names_without_positions": (lambda arm: _joints([*JOINTS, GRIPPER], lambda: arm.q.tolist()), "positions"),
}


@pytest.mark.parametrize("defect", list(BAD_JOINTS))
def test_unusable_joint_states_end_the_goal_bad_input_and_nothing_is_published(node_under_test, defect):
    harness, process, arm, planner = node_under_test
    make, named = BAD_JOINTS[defect]
    arm.joint_states_on = False
    timer = _replacing(harness, arm.joint_pub, make(arm), 0.01)
    try:
        response, commands = _goal(harness, planner, arm, max_actions=10)
    finally:
        _stop(harness, timer)
        arm.joint_states_on = True
        time.sleep(0.2)
    result = response.result
    assert response.status == 6 and result.status == Act.Result.STATUS_STALE_INPUT
    assert result.outcome.reason == "bad_input" and result.outcome.actions == 0
    assert named in result.message, result.message
    assert commands == [], "nothing may be published from joint states the node cannot trust"
    assert planner.outcomes[-1].reason == "bad_input"
    assert wait_for(lambda: "bad_input: " in process.output() and named in process.output(), 3.0), \
        "the node did not log why"


READABLE_JOINTS = {
    "reordered_names": lambda arm: _joints([GRIPPER, *reversed(JOINTS)],
                                           lambda: [arm.gripper, *reversed(arm.q.tolist())]),
    "extra_names": lambda arm: _joints(["base_yaw", *JOINTS, GRIPPER, "fr3_finger_joint2"],
                                       lambda: [9.0, *_with_gripper(arm), arm.gripper]),
}


@pytest.mark.parametrize("variant", list(READABLE_JOINTS))
def test_joint_states_are_read_by_name_whatever_their_order_or_extras(node_under_test, variant):
    harness, process, arm, planner = node_under_test
    arm.joint_states_on = False
    start = arm.q.tolist()
    timer = _replacing(harness, arm.joint_pub, READABLE_JOINTS[variant](arm), 0.01)
    try:
        response, commands = _goal(harness, planner, arm, max_actions=10)
    finally:
        _stop(harness, timer)
        arm.joint_states_on = True
    result = response.result
    assert result.status == Act.Result.STATUS_COMPLETED, result.message
    assert len(commands) == 11 and all(math.isfinite(v) for c in commands for v in c)
    # Read in the right order, the first target is a small step from where the arm was.
    assert max(abs(a - b) for a, b in zip(commands[0][:7], start)) < 0.2
