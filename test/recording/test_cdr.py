"""The recording's own CDR encoder writes exactly the bytes of mcap_ros2's reference encoder and
of ROS 2's own serialisation (rclpy), for every message it writes."""

from __future__ import annotations

import math

import pytest

pytest.importorskip("mcap_ros2", reason="needs the [record] extra")
from mcap_ros2._dynamic import serialize_dynamic

from sequence_ai._loop._outcome import RunOutcome, RunProgress
from sequence_ai.recording import messages as m
from sequence_ai.recording.cdr import encoder_for
from sequence_ai.recording.schemas import ros_name, schema_text

NS = 1_796_154_331_889_142_466


def _every_message():
    """One built message of every kind, with the awkward cases: empty arrays, odd-length strings
    before 8-byte fields, NaN, non-ASCII text."""
    outcome = m.outcome_fields(RunOutcome(actions=3, chunks=1, elapsed_s=0.5, reason="timeout", max_seam_jump=None),
                               "délai", None, "pick", 2, 1)
    built = [
        *m.run_started(NS, "pi05-droid", "e", None, ("a", "bc"), ("wrist",), "{}"),
        *m.instruction(NS, "prends le cube rouge"),
        *m.frames(NS, [{"view": "wrist", "data": b"\xff\xd8\xff" + bytes(range(256)) * 3, "timestamp_ms": 1234},
                       {"view": "x", "data": b"", "timestamp_ms": None}]),
        *m.joint_state(NS, {"joint_positions": [0.5, -1.25, 3.0], "gripper": [0.04]}, ()),
        *m.joint_state(NS, {"joint_positions": [0.5], "joint_velocities": [0.1]}, ("j1",)),
        *m.request(NS, "r-0000abcd", "pick", "ep", 7, ("a", "b")),
        *m.answer(NS, NS - 150_000_000, "r-1", [[0.1, 0.2, 0.3]] * 4, 0.15, "joint_position", 15.0, 1, 3, ("w",), ""),
        *m.answer(NS, NS, "r-2", [], 0.4, "", math.nan, 0, 0, (), "Unavailable: worker down"),
        *m.command(NS, [1.0, 2.5, -3.0], "r-1", 2, 11),
        *m.command(NS, [1.0], "r-1", 3, 12, 0.412, -0.0125),
        *m.hold(NS, "underrun", 11),
        *m.progress(NS, m.progress_fields(RunProgress(running=True, actions=4, instruction="pick",
                                                      refill_latency_s=0.2))),
        *m.outcome(NS, outcome),
    ]
    return [(schema, message) for _topic, schema, message, _ns in built]


@pytest.mark.parametrize("schema,message", _every_message(), ids=lambda v: v if isinstance(v, str) else "")
def test_bytes_match_the_reference_encoder(schema, message):
    reference = serialize_dynamic(ros_name(schema), schema_text(schema))[ros_name(schema)]
    assert encoder_for(schema)(message) == reference(message)


def test_standard_messages_decode_in_ros2_to_what_was_built():
    """rclpy's own type support reads our bytes back to the same message. (Its serialize_message
    leaves padding unset and appends unset bytes past the message, so bytes are not compared.)"""
    serialization = pytest.importorskip("rclpy.serialization", reason="rclpy not importable: run through "
                                        "scripts/workspace.sh")
    from builtin_interfaces.msg import Time
    from sensor_msgs.msg import CompressedImage, JointState
    from std_msgs.msg import Header, String

    stamp = Time(sec=NS // 10**9, nanosec=NS % 10**9)
    built = _every_message()
    expected = {
        "sensor_msgs/CompressedImage": CompressedImage(header=Header(stamp=Time(sec=1, nanosec=234_000_000),
                                                                     frame_id="wrist"), format="jpeg",
                                                       data=b"\xff\xd8\xff" + bytes(range(256)) * 3),
        "sensor_msgs/JointState": JointState(header=Header(stamp=stamp), name=["joint_1", "joint_2", "joint_3",
                                                                               "gripper_1"],
                                             position=[0.5, -1.25, 3.0, 0.04]),
        "std_msgs/String": String(data="prends le cube rouge"),
    }
    for schema, ros_message in expected.items():
        ours = encoder_for(schema)(next(message for name, message in built if name == schema))
        assert serialization.deserialize_message(ours, type(ros_message)) == ros_message, schema


def test_a_missing_field_is_an_error_not_a_zero():
    with pytest.raises(KeyError):
        encoder_for("sequence_ai_record/Hold")({"header": m.header(NS), "reason": "underrun"})
