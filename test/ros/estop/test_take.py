"""One take of the e-stop topic (estop/take.py, estop/topic.py): its serialized messages decoded
(a truncated one is a press), and every sample of one take acted on in one go — a publisher that
pressed and released within the take still stops the running goal; a press amid another's flood
of false engages. A real EStop on an rclpy node; the samples handed to it as a take hands them."""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy", reason="rclpy not importable: run through scripts/workspace.sh")

from sequence_ai_ros.estop.take import Sample, decode_bool
from sequence_ai_ros.estop.topic import EStop

A, B = b"A" * 16, b"B" * 16
CDR_LE, CDR_BE = b"\x00\x01\x00\x00", b"\x00\x00\x00\x00"


def test_a_serialized_bool_decodes_and_what_is_not_one_does_not():
    assert decode_bool(CDR_LE + b"\x01\x00\x00\x00") is True
    assert decode_bool(CDR_BE + b"\x00") is False
    assert decode_bool(CDR_LE + b"\x02") is True and decode_bool(CDR_LE + b"\xff") is True  # as the C type reads it
    for cut in (b"", b"\x00", CDR_LE, b"\x01\x01\x00\x00\x01", b"\x00\x09\x00\x00\x01"):  # short, or not CDR
        assert decode_bool(cut) is None, cut


@pytest.fixture
def estop(ros):
    engaged = []
    estop = EStop(ros.node, "estop_take_test", start_engaged=False, heartbeat_s=0.0,
                  on_engaged=lambda: engaged.append(True))
    estop.engaged_calls = engaged
    yield estop
    estop.destroy()


def test_a_press_released_within_one_take_still_stops_the_goal(estop):
    estop._on_samples([Sample(B, False), Sample(A, True), Sample(B, False), Sample(A, False)])
    assert estop.engaged_calls, "the press within the take stopped the running goal"
    assert not estop.engaged, "its own false, the newest, released it"
    assert {s.gid: s.state for s in estop.sources.sources()} == {A: "released", B: "released"}


def test_a_press_amid_a_flood_of_another_publishers_false_engages_in_that_take(estop):
    estop._on_samples([Sample(B, False)] * 500 + [Sample(A, True)] + [Sample(B, False)] * 500)
    assert estop.engaged_calls and estop.engaged
    assert "presses it" in estop.goal_refusal()


def test_a_message_that_cannot_be_decoded_presses_for_its_publisher(estop):
    estop._on_samples([Sample(A, False), Sample(A, True, decoded=False), Sample(A, False)])
    assert estop.engaged_calls and not estop.engaged, "pressed within the take, then its own false"
    estop._on_samples([Sample(A, True, decoded=False)])
    assert estop.engaged and [s.state for s in estop.sources.sources()] == [
        "pressing (a message that could not be decoded)"]
    assert estop.sources.sources()[0].undecodable == 2
