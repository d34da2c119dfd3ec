"""prepare() and to_joint_positions(): only what the catalogue declares, nothing added."""

from __future__ import annotations

import pytest

from sequence_ai import InvalidRequest, Model, SequencesError, prepare, to_joint_positions
from sequence_ai._act._chunk import ActionChunk

PI05 = Model.from_wire({
    "id": "accounts/sequences/models/pi05-droid", "endpoint": "act", "state_dim": 8,
    "state_layout": {"joint_positions": 7, "gripper": 1}, "action_space": "joint_delta",
    "action_semantics": {"rows": "joint_delta", "controller_interface": "joint_velocity",
                         "gripper_interface": "position", "to_joint_positions": "offset_q_ref",
                         "gripper_binarize_threshold": 0.5, "clip": [-1.0, 1.0]},
})
COSMOS = Model.from_wire({
    "id": "accounts/sequences/models/cosmos3-edge-policy-droid", "endpoint": "act", "state_dim": 8,
    "state_layout": {"joint_positions": 7, "gripper": 1}, "action_space": "joint_absolute",
    "action_semantics": {"rows": "joint_absolute", "controller_interface": "joint_position",
                         "gripper_interface": "position", "to_joint_positions": None,
                         "gripper_binarize_threshold": 0.5, "clip": None},
})
ROWS = [
    [0.1, -0.2, 1.7, -3.0, 0.0, 0.5, -0.5, 0.51],
    [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.5],
]


def _chunk(rows, space="joint_delta"):
    return ActionChunk(steps=[list(r) for r in rows], robot="droid_franka", action_space=space, action_dim=8,
                       control_frequency_hz=15.0, covers_seconds=len(rows) / 15, open_loop_horizon=1)


def test_prepare_binarises_the_gripper_and_clips_the_row():
    assert prepare(_chunk(ROWS), PI05, 0) == [0.1, -0.2, 1.0, -1.0, 0.0, 0.5, -0.5, 1.0]
    assert prepare(ROWS, PI05, 1)[-1] == 0.0  # 0.5 is not above the threshold


def test_prepare_without_clip_leaves_targets_alone():
    rows = [[1.5, -2.0, 0.3, 0.0, 0.0, 0.0, 2.9, 0.7]]
    assert prepare(_chunk(rows, "joint_absolute"), COSMOS, 0) == [1.5, -2.0, 0.3, 0.0, 0.0, 0.0, 2.9, 1.0]


def test_prepare_refuses_rows_of_another_action_space():
    with pytest.raises(InvalidRequest, match="joint_absolute"):
        prepare(_chunk(ROWS, "joint_absolute"), PI05, 0)


def test_prepare_checks_the_index():
    with pytest.raises(IndexError):
        prepare(ROWS, PI05, 2)


def test_to_joint_positions_offsets_every_row_from_the_same_q_ref():
    q_ref = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    targets = to_joint_positions(_chunk(ROWS), q_ref, PI05)
    assert targets[0][:7] == pytest.approx([1.1, 1.8, 4.7, 1.0, 5.0, 6.5, 6.5])
    assert targets[1][:7] == pytest.approx([1.1, 2.1, 3.1, 4.1, 5.1, 6.1, 7.1])  # not chained on row 0
    assert [t[7] for t in targets] == [0.51, 0.5]  # gripper passed through


def test_to_joint_positions_refuses_cosmos3_naming_it_and_why():
    with pytest.raises(InvalidRequest) as refused:
        to_joint_positions(_chunk(ROWS, "joint_absolute"), [0.0] * 7, COSMOS)
    assert "cosmos3-edge-policy-droid" in str(refused.value)
    assert "already joint targets" in str(refused.value)
    assert isinstance(refused.value, SequencesError)


def test_to_joint_positions_wants_one_q_ref_per_joint():
    with pytest.raises(ValueError, match="q_ref has 8"):
        to_joint_positions(ROWS, [0.0] * 8, PI05)
