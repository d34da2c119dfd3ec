"""Send-time checks on hand-assembled observations (docs/PROTOCOL.md §7.2, §7.3, §8.1)."""

from __future__ import annotations

import warnings

import pytest

from sequence_ai import ImageFrame, Model, Observation, ObservationMismatch, Proprioception, observation
from sequence_ai._act._request import ObservationCheck
from sequence_ai._vision._observation import observation_problems, problems_message, trim_frames

PI05 = Model.from_wire(
    {
        "id": "accounts/sequences/models/pi05-droid",
        "endpoint": "act",
        "state_dim": 8,
        "state_layout": {"joint_positions": 7, "gripper": 1},
        "camera_views": ["exterior_1", "wrist_left"],
        "context_frames": 1,
    }
)


def _obs(views, joints=7, gripper=1, stamps=None):
    stamps = stamps or [None] * len(views)
    return Observation(
        images=[ImageFrame(view=v, data=f"img{i}", timestamp_ms=t) for i, (v, t) in enumerate(zip(views, stamps))],
        proprioception=Proprioception(joint_positions=[0.0] * joints, gripper=[0.0] * gripper if gripper else None),
        instruction="pick",
    )


def test_matching_observation_has_no_problems():
    assert observation_problems(PI05, _obs(["exterior_1", "wrist_left"])) == ([], False)


def test_missing_declared_view_is_rejected_and_named():
    problems, rejected = observation_problems(PI05, _obs(["exterior_1"]))
    assert rejected
    assert any("wrist_left" in p and "missing" in p for p in problems)
    assert problems_message(PI05, problems, rejected).endswith("at least one will be rejected")


def test_unknown_view_is_a_problem_but_not_rejected():
    problems, rejected = observation_problems(PI05, _obs(["exterior_1", "wrist_left", "top_down"]))
    assert not rejected
    assert any("top_down" in p for p in problems)
    assert problems_message(PI05, problems, rejected).endswith("accepted but quietly wrong")


def test_eight_joints_and_no_gripper_is_a_problem_though_widths_sum():
    problems, rejected = observation_problems(PI05, _obs(["exterior_1", "wrist_left"], joints=8, gripper=0))
    assert not rejected
    assert len(problems) == 2
    assert any("gripper" in p for p in problems)


def test_trim_keeps_latest_frame_per_view_in_view_order():
    obs = _obs(["wrist_left", "exterior_1", "wrist_left", "exterior_1"], stamps=[30, None, 10, 5])
    trimmed, dropped = trim_frames(PI05, obs)
    assert dropped
    assert [(f.view, f.timestamp_ms) for f in trimmed.images] == [("wrist_left", 30), ("exterior_1", None)]
    assert trimmed.proprioception is obs.proprioception


def test_trim_without_context_frames_is_untouched():
    model = Model.from_wire({"id": "x", "camera_views": ["a"]})
    obs = _obs(["a", "a"])
    assert trim_frames(model, obs) == (obs, False)
    assert trim_frames(PI05, _obs(["exterior_1", "wrist_left"]))[1] is False


def test_the_send_time_check_applies_its_mode_to_the_verdict_observation_built_and_sees_later_changes():
    # An observation is checked once against a row: observation() keeps its verdict, and the
    # send-time check (validate=) reads it, unless the observation or the row is not the one checked.
    frame = "aGVsbG8="  # already base64: observation() passes a str through
    with warnings.catch_warnings(record=True) as built_with:
        warnings.simplefilter("always")
        short = observation(PI05, images={"exterior_1": frame, "wrist_left": frame}, joints=[0.0] * 7,
                            instruction="pick", strict=False)  # no gripper: quietly wrong, one warning
    assert len(built_with) == 1
    with pytest.raises(ObservationMismatch, match="gripper"):
        ObservationCheck("strict").apply(PI05, short)
    with warnings.catch_warnings(record=True) as sent_with:
        warnings.simplefilter("always")
        assert ObservationCheck("warn").apply(PI05, short) is short
        assert ObservationCheck("off").apply(PI05, short) is short
    assert [str(w.message) for w in sent_with] == [str(built_with[0].message)]

    good = observation(PI05, images={"exterior_1": frame, "wrist_left": frame}, joints=[0.0] * 7, gripper=[0.0],
                       instruction="pick")
    assert ObservationCheck("strict").apply(PI05, good) is good
    good.images.pop()  # changed after it was built: the verdict no longer describes it
    with pytest.raises(ObservationMismatch, match="wrist_left"):
        ObservationCheck("strict").apply(PI05, good)
    other_row = Model.from_wire({**PI05.raw, "camera_views": ["exterior_1"]})
    assert ObservationCheck("strict").apply(other_row, good) is good  # checked anew against another row
