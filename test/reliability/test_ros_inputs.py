"""Malformed inputs to the node, over real topics: images it cannot read (or the model would
refuse) and joint states it cannot trust (missing, NaN, a joint named twice, stamped in the
future) end the goal `bad_input` before anything is acted (the outcome and the node's log say
which input and why) and show on /diagnostics as an error even with no goal running; messages
stamped long ago end it `stale_input`. The only command such a goal publishes is one hold at the
last trusted position, never one taken from the bad sample. Joint states it can read whatever
their order, extra joints or (fresh) stamps drive the arm normally.

One node serves every case; a case replaces the arm double's good messages on one topic with its
own for the duration of one goal.
"""

from __future__ import annotations

import math
import time
from typing import Callable, List

import pytest

pytest.importorskip("rclpy", reason="rclpy not importable: run through scripts/workspace.sh")

from _ros_goals import GoalRun
from builtin_interfaces.msg import Time
from eventually import wait_until
from ros_harness import JOINTS, node_for_the_module
from sensor_msgs.msg import Image, JointState
from sequence_ai_ros.action import Act

from sequence_ai_ros.inputs.images import FrameRule
from sequence_ai_ros.inputs.samples import BadInput, LatestSample, StaleInput, joint_check

pytestmark = [pytest.mark.ros, pytest.mark.slow]

WIDTH, HEIGHT = 640, 360
GRIPPER = "fr3_finger_joint1"


@pytest.fixture(scope="module")
def node_under_test(local_platform, tmp_path_factory):
    # Diagnostics four times a second: each case waits for one that shows the node took its messages.
    with node_for_the_module(local_platform, tmp_path_factory.mktemp("ros_inputs"),
                             diagnostics_period_s=0.25) as (harness, started):
        yield (harness, *started)


def _replacing(harness, planner, publisher, make: Callable[[], object], period_s: float,
               taken: Callable[[object], bool], after_s: float = 0.0):
    """Publishes `make()` every period_s in place of the arm double's messages, once the node's
    diagnostics, published `after_s` or more after the switch, show `taken`: ours are its latest."""
    switched = time.time()
    timer = harness.node.create_timer(period_s, lambda: publisher.publish(make()))
    if planner.diagnosed_after(switched + after_s, taken) is None:
        _stop(harness, timer)
        raise AssertionError(f"the node's diagnostics never showed our messages: {planner.diagnostics}")
    return timer


def _joints_fresh(status) -> bool:
    """The node's joint state is under 0.25 s old: half a second after the arm double stopped, ours."""
    age = next(kv.value for kv in status.values if kv.key.startswith("age_s") and kv.key.endswith("/joint_states"))
    return age != "never" and float(age) < 0.25


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


def _stamp(harness, offset_s: float) -> Time:
    """The harness's clock now, moved by offset_s (the node and the harness share the wall clock)."""
    now = harness.node.get_clock().now().nanoseconds + int(offset_s * 1e9)
    return Time(sec=now // 1_000_000_000, nanosec=now % 1_000_000_000)


def _square(side: int = 360) -> Callable[[], Image]:
    """A well-formed square frame (1:1): pi05-droid was trained on 16:9 and refuses it."""
    data = bytes(side * side * 3)
    return lambda: Image(height=side, width=side, encoding="rgb8", step=side * 3, data=data)


def _old_frame(harness) -> Callable[[], Image]:
    make = _image()

    def frame() -> Image:
        message = make()
        message.header.stamp = _stamp(harness, -3600.0)
        return message
    return frame


BAD_IMAGES = {  # defect -> (message maker, words the outcome names, reason)
    "wrong_step": (lambda h: _image(step=WIDTH * 3 - 1), "step", "bad_input"),
    "truncated_data": (lambda h: _image(size=WIDTH * 3 * HEIGHT // 2), "bytes", "bad_input"),
    "unknown_encoding": (lambda h: _image(encoding="yuv422_weird"), "yuv422_weird", "bad_input"),
    "square_frame": (lambda h: _square(), "aspect ratio", "bad_input"),
    "stamped_an_hour_ago": (_old_frame, "stale", "stale_input"),
}


@pytest.mark.parametrize("defect", list(BAD_IMAGES))
def test_an_unusable_image_ends_the_goal_before_any_action(node_under_test, defect):
    harness, process, arm, planner = node_under_test
    make, named, reason = BAD_IMAGES[defect]
    topic = f"{arm.ns}/cameras/wrist_left/image_raw"
    arm.silent_views.add("wrist_left")
    timer = _replacing(harness, planner, arm.image_pubs["wrist_left"], make(harness), 1 / 15,
                       lambda status: topic in status.message and named in status.message)
    try:
        response, commands = _goal(harness, planner, arm, max_actions=10)
    finally:
        _stop(harness, timer)
        arm.silent_views.discard("wrist_left")
    result = response.result
    assert response.status == 6 and result.status == Act.Result.STATUS_STALE_INPUT
    assert result.outcome.reason == reason and result.outcome.actions == 0 and result.outcome.held
    assert "wrist_left" in result.message and named in result.message, result.message
    assert planner.outcomes[-1].reason == reason
    assert len(commands) == 1, f"only the hold may be published, got {len(commands)} commands"
    assert commands[0][:7] == pytest.approx(arm.q.tolist(), abs=1e-9), "the hold is where the arm is"
    assert wait_until(lambda: f"{reason}: {topic}" in process.output(), 3.0), "the node did not log why"


@pytest.mark.parametrize("defect", ["unknown_encoding", "square_frame"])
def test_an_unusable_image_is_reported_on_diagnostics_before_any_goal(node_under_test, defect):
    harness, process, arm, planner = node_under_test
    make, named, _ = BAD_IMAGES[defect]
    topic = f"{arm.ns}/cameras/wrist_left/image_raw"
    arm.silent_views.add("wrist_left")
    timer = _replacing(harness, planner, arm.image_pubs["wrist_left"], make(harness), 1 / 15,
                       lambda status: topic in status.message and named in status.message)
    try:
        def reported() -> bool:  # this defect: the status may still name the one before for a moment
            status = planner.diagnostics
            return status is not None and status.level == b"\x02" and topic in status.message and named in status.message
        assert wait_until(reported, 10.0), planner.diagnostics
        values = {kv.key: kv.value for kv in planner.diagnostics.values}
        assert named in planner.diagnostics.message and named in values["bad_input"]
    finally:
        _stop(harness, timer)
        arm.silent_views.discard("wrist_left")
    assert wait_until(lambda: planner.diagnostics.level == b"\x00", 5.0), "good frames again: back to OK"


def _joints(names: List[str], positions: Callable[[], List[float]]) -> Callable[[], JointState]:
    return lambda: JointState(name=names, position=positions())


def _with_gripper(arm) -> List[float]:
    return [*arm.q.tolist(), arm.gripper]


def _joint2_twice(arm, second: str) -> Callable[[], JointState]:
    """fr3_joint2 listed twice: its true value, then one 1 rad off (a reader taking the last one
    would jump the arm by 1 rad)."""
    return _joints([*JOINTS, second, GRIPPER], lambda: [*arm.q.tolist(), arm.q[1] + 1.0, arm.gripper])


def _stamped(harness, arm, offset_s: float) -> Callable[[], JointState]:
    def make() -> JointState:
        message = JointState(name=[*JOINTS, GRIPPER], position=_with_gripper(arm))
        message.header.stamp = _stamp(harness, offset_s)
        return message
    return make


BAD_JOINTS = {  # defect -> (message maker, words the outcome names, reason)
    "missing_joint": (lambda h, arm: _joints([*JOINTS[:3], *JOINTS[4:], GRIPPER],
                                             lambda: [*arm.q[:3], *arm.q[4:], arm.gripper]), "fr3_joint4", "bad_input"),
    "nan_position": (lambda h, arm: _joints([*JOINTS, GRIPPER],
                                            lambda: [*arm.q[:2], math.nan, *arm.q[3:], arm.gripper]), "nan", "bad_input"),
    "names_without_positions": (lambda h, arm: _joints([*JOINTS, GRIPPER], lambda: arm.q.tolist()), "positions",
                                "bad_input"),
    "joint_named_twice": (lambda h, arm: _joint2_twice(arm, "fr3_joint2"), "'fr3_joint2' twice", "bad_input"),
    "look_alike_names": (lambda h, arm: _joint2_twice(arm, " FR3_joint2"), "ambiguous", "bad_input"),
    "stamped_an_hour_ahead": (lambda h, arm: _stamped(h, arm, 3600.0), "ahead", "bad_input"),
    "stamped_an_hour_ago": (lambda h, arm: _stamped(h, arm, -3600.0), "stale", "stale_input"),
}


@pytest.mark.parametrize("defect", list(BAD_JOINTS))
def test_untrusted_joint_states_end_the_goal_with_one_hold_at_the_last_trusted_position(node_under_test, defect):
    harness, process, arm, planner = node_under_test
    make, named, reason = BAD_JOINTS[defect]
    trusted = arm.q.tolist()  # where the arm double's own (last good) joint states put it
    arm.joint_states_on = False
    timer = _replacing(harness, planner, arm.joint_pub, make(harness, arm), 0.01,
                       lambda status: named in status.message)
    try:
        response, commands = _goal(harness, planner, arm, max_actions=10)
    finally:
        _stop(harness, timer)
        arm.joint_states_on = True
        # the next case's last trusted position: the node has the arm double's good joint states again
        planner.diagnosed_after(time.time(), lambda status: status.level == b"\x00")
    result = response.result
    assert response.status == 6 and result.status == Act.Result.STATUS_STALE_INPUT
    assert result.outcome.reason == reason and result.outcome.actions == 0 and result.outcome.held
    assert named in result.message, result.message
    # Nothing but the hold, and never from the bad sample: the last trusted position exactly.
    assert len(commands) == 1, f"only the hold may be published, got {len(commands)} commands"
    assert commands[0][:7] == pytest.approx(trusted, abs=1e-9), "the hold must be the last trusted position"
    assert planner.outcomes[-1].reason == reason
    assert wait_until(lambda: f"{reason}: " in process.output() and named in process.output(), 3.0), \
        "the node did not log why"


def test_a_joint_state_stamped_in_the_future_is_reported_on_diagnostics(node_under_test):
    harness, process, arm, planner = node_under_test
    arm.joint_states_on = False
    timer = _replacing(harness, planner, arm.joint_pub, _stamped(harness, arm, 3600.0), 0.01,
                       lambda status: "ahead" in status.message)
    try:
        def reported() -> bool:
            status = planner.diagnostics
            return status is not None and status.level == b"\x02" and "ahead" in status.message
        assert wait_until(reported, 5.0), planner.diagnostics
    finally:
        _stop(harness, timer)
        arm.joint_states_on = True
    assert wait_until(lambda: planner.diagnostics.level == b"\x00", 5.0), "good joint states again: back to OK"


READABLE_JOINTS = {
    "reordered_names": lambda h, arm: _joints([GRIPPER, *reversed(JOINTS)],
                                              lambda: [arm.gripper, *reversed(arm.q.tolist())]),
    "extra_names": lambda h, arm: _joints(["base_yaw", *JOINTS, GRIPPER, "fr3_finger_joint2"],
                                          lambda: [9.0, *_with_gripper(arm), arm.gripper]),
    "stamped_as_they_are_published": lambda h, arm: _stamped(h, arm, 0.0),
}


@pytest.mark.parametrize("variant", list(READABLE_JOINTS))
def test_joint_states_are_read_by_name_whatever_their_order_extras_or_fresh_stamps(node_under_test, variant):
    harness, process, arm, planner = node_under_test
    arm.joint_states_on = False
    start = arm.q.tolist()
    timer = _replacing(harness, planner, arm.joint_pub, READABLE_JOINTS[variant](harness, arm), 0.01,
                       _joints_fresh, after_s=0.5)
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


# -- the freshness rules, on a clock the test sets ---------------------------------------------------
class _Clock:
    def __init__(self, now_s: float):
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s


def _state(positions: List[float], stamp_s: float = 0.0) -> JointState:
    message = JointState(name=[*JOINTS, GRIPPER], position=positions)
    message.header.stamp = Time(sec=int(stamp_s), nanosec=round((stamp_s % 1) * 1e9))
    return message


def _joint_sample(clock: _Clock) -> LatestSample:
    return LatestSample("/arm/joint_states", 0.25, clock, check=joint_check(JOINTS, GRIPPER))


GOOD = [0.0, -0.5, 0.0, -2.2, 0.0, 1.8, 0.8, 0.04]


def test_age_counts_from_the_stamp_where_there_is_one_and_from_arrival_where_it_is_zero():
    clock = _Clock(1000.0)
    sample = _joint_sample(clock)
    sample.store(_state(GOOD, stamp_s=999.9))  # stamped 0.1 s before it arrived
    assert sample.age_s() == pytest.approx(0.1) and sample.fresh() is not None
    clock.now_s = 1000.2
    with pytest.raises(StaleInput, match=r"stamped 0\.300s ago"):
        sample.fresh()
    sample.store(_state(GOOD, stamp_s=999.9))  # frozen data re-published: arriving again makes it no younger
    with pytest.raises(StaleInput, match=r"stamped 0\.300s ago"):
        sample.fresh()
    sample.store(_state(GOOD))  # a driver that does not stamp: as old as its arrival
    assert sample.age_s() == pytest.approx(0.0) and sample.fresh() is not None
    clock.now_s = 1000.46
    with pytest.raises(StaleInput, match=r"last message 0\.260s ago"):
        sample.fresh()


def test_a_stamp_ahead_by_more_than_the_max_age_is_bad_input_and_never_trusted():
    clock = _Clock(1000.0)
    sample = _joint_sample(clock)
    sample.store(_state(GOOD, stamp_s=1000.2))  # within the tolerance (clock skew): fresh
    assert sample.fresh() is not None and sample.age_s() == pytest.approx(-0.2)
    ahead = _state([v + 1.0 for v in GOOD], stamp_s=1000.3)
    sample.store(ahead)
    with pytest.raises(BadInput, match=r"0\.300s ahead"):
        sample.fresh()
    assert sample.trusted() is not ahead and sample.trusted().position[0] == 0.0
    assert "ahead" in sample.problem()


def test_the_hold_sample_is_the_newest_good_one_and_goes_stale_like_any_other():
    clock = _Clock(50.0)
    sample = _joint_sample(clock)
    good = _state(GOOD)
    sample.store(good)
    twice = JointState(name=[*JOINTS, "fr3_joint2", GRIPPER], position=[*GOOD[:7], GOOD[1] + 1.0, GOOD[7]])
    sample.store(twice)
    with pytest.raises(BadInput, match="'fr3_joint2' twice"):
        sample.fresh()
    assert sample.trusted() is good  # never the bad sample
    old = _state(GOOD, stamp_s=40.0)  # passes the check, but was stale when it arrived
    sample.store(old)
    assert sample.trusted() is good
    clock.now_s = 50.3
    with pytest.raises(StaleInput, match="no trustworthy message"):
        sample.trusted()  # the arm may have moved since: nothing to hold at


def test_sim_time_before_the_first_clock_message_says_so():
    sample = _joint_sample(_Clock(0.0))
    sample.store(_state(GOOD, stamp_s=1700000000.0))
    with pytest.raises(BadInput, match="no /clock yet"):
        sample.fresh()


def test_the_frame_rule_is_the_clients_own_sizing_rule(local_platform):
    import numpy as np

    import sequence_ai

    pi05 = {m.short_id: m for m in sequence_ai.models("act", base_url=local_platform.base_url)}["pi05-droid"]
    rule = FrameRule(pi05)
    square = rule.problem(np.zeros((1400, 1400, 3), dtype=np.uint8))
    assert "aspect ratio 1:1" in square and "16:9" in square and "Crop" in square, square
    assert rule.problem(np.zeros((720, 1280, 3), dtype=np.uint8)) is None
    assert rule.problem(np.zeros((224, 224, 3), dtype=np.uint8)) is None  # already the model's size


LONG = "pick up the cup " * 256  # 4096 characters: what the worker takes at most
DOOR = {  # a goal that could only fail -> (instruction, max_seconds, words of its refusal)
    "max_seconds 1e308 (it overflowed before the hold: no outcome, status 0)": (
        "pick up the cup", 1e308, "max_seconds must be at most 86400"),
    "max_seconds 1e300 (accepted, then raised:OverflowError)": ("pick up the cup", 1e300, "at most 86400"),
    "max_seconds a day and a second": ("pick up the cup", 86401.0, "at most 86400"),
    "max_seconds NaN": ("pick up the cup", math.nan, "max_seconds must be > 0"),
    "an instruction one character over the worker's limit": (LONG + "!", 1.0, "instruction is 4097 characters"),
    "a 1 MB instruction (accepted, then the worker's 422)": ("x" * 1_000_000, 1.0, "instruction is 1000000 characters"),
}


def test_a_goal_that_could_only_fail_is_rejected_at_the_door_naming_why(node_under_test):
    harness, process, arm, planner = node_under_test
    since = time.monotonic()
    for case, (instruction, max_seconds, words) in DOOR.items():
        reason = planner.rejected(instruction, max_seconds=max_seconds, max_actions=0)
        assert words in reason, (case, reason)
    assert [c for c in arm.command_log() if c[0] >= since] == [], "a rejected goal moves nothing"
    # At the bounds themselves the goal is accepted and runs: the worker takes 4096 characters.
    response = GoalRun(harness.node, planner, LONG, max_seconds=86400.0, max_actions=3).wait(30)
    assert response.result.status == Act.Result.STATUS_COMPLETED, response.result.message
    assert response.result.outcome.actions == 3 and response.result.outcome.held
