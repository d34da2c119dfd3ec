"""The public ROS interfaces: generated from the built workspace, every field survives a CDR
round trip, and the status constants planners branch on exist."""

from __future__ import annotations

import math

import pytest

pytestmark = pytest.mark.ros

serialization = pytest.importorskip("rclpy.serialization", reason="rclpy not importable: run through scripts/workspace.sh")

from builtin_interfaces.msg import Time
from sequence_ai_ros.action import Act
from sequence_ai_ros.msg import RunOutcome, WarmingStatus
from sequence_ai_ros.srv import SetInstruction


def round_trip(message):
    data = serialization.serialize_message(message)
    return serialization.deserialize_message(data, type(message))


def sample_outcome() -> RunOutcome:
    return RunOutcome(
        stamp=Time(sec=1764510000, nanosec=123),
        reason="raised:Unavailable",
        stopped_early=True,
        message="worker unreachable after 5 reconnect attempts",
        actions=250,
        chunks=17,
        elapsed_s=16.8,
        underruns=2,
        underrun_s=0.31,
        late_beats=1,
        late_beat_s=0.33,
        episode_resets=1,
        instruction_swaps=3,
        max_instruction_lag_s=0.74,
        max_seam_jump=0.02,
        observe_s=0.9,
        held=True,
        action_space="joint_delta",
        model="pi05-droid",
        final_instruction="put the cup on the plate",
        age_p50_s=0.83,
        age_max_s=1.12,
        lateness_p50_s=0.05,
        lateness_max_s=0.31,
    )


def test_run_outcome_round_trips_every_field():
    original = sample_outcome()
    copy = round_trip(original)
    for name in original.get_fields_and_field_types():
        assert getattr(copy, name) == getattr(original, name), name


def test_run_outcome_carries_nan_for_unmeasured_values():
    unmeasured = ("max_seam_jump", "max_instruction_lag_s", "age_p50_s", "age_max_s", "lateness_p50_s", "lateness_max_s")
    copy = round_trip(RunOutcome(**dict.fromkeys(unmeasured, math.nan)))
    assert all(math.isnan(getattr(copy, name)) for name in unmeasured)


def test_warming_status_round_trips_every_field():
    original = WarmingStatus(
        stamp=Time(sec=5, nanosec=6), model="pi05-droid", ready=False, warming=True,
        waited_s=12.5, eta_s=math.nan, message="starting the model",
    )
    copy = round_trip(original)
    assert copy.stamp == original.stamp and copy.model == "pi05-droid"
    assert (copy.ready, copy.warming, copy.waited_s) == (False, True, 12.5)
    assert math.isnan(copy.eta_s) and copy.message == "starting the model"


def test_act_goal_result_feedback_round_trip():
    goal = Act.Goal(instruction="pick up the cup", max_seconds=30.0, max_actions=450)
    assert round_trip(goal) == goal
    result = Act.Result(status=Act.Result.STATUS_TIMEOUT, message="timeout", outcome=sample_outcome())
    assert round_trip(result) == result
    feedback = Act.Feedback(
        actions=10, chunks=2, buffered=6, elapsed_s=0.7, instruction="pick up the cup",
        underruns=0, warming=False, warming_eta_s=math.nan,
        age_p50_s=0.8, age_max_s=0.9, lateness_p50_s=0.0, lateness_max_s=math.nan,
    )
    copy = round_trip(feedback)
    assert (copy.actions, copy.chunks, copy.buffered, copy.instruction) == (10, 2, 6, "pick up the cup")
    assert (copy.age_p50_s, copy.age_max_s, copy.lateness_p50_s) == (0.8, 0.9, 0.0)
    assert math.isnan(copy.warming_eta_s) and math.isnan(copy.lateness_max_s)


def test_act_status_constants_are_distinct_and_named():
    names = [n for n in dir(Act.Result) if n.startswith("STATUS_")]
    expected = {
        "STATUS_COMPLETED", "STATUS_UNTIL", "STATUS_TIMEOUT", "STATUS_INTERRUPTED", "STATUS_CANCELED",
        "STATUS_UNSAFE_ACTION", "STATUS_STALE_INPUT", "STATUS_POLICY_ERROR", "STATUS_SHUTDOWN", "STATUS_REJECTED",
        "STATUS_ESTOP",
    }
    assert expected <= set(names)
    values = [getattr(Act.Result, n) for n in expected]
    assert len(set(values)) == len(values)


def test_set_instruction_round_trips():
    request = SetInstruction.Request(instruction="now put it on the plate")
    assert round_trip(request) == request
    response = SetInstruction.Response(accepted=True, previous="pick up the cup", message="")
    assert round_trip(response) == response
