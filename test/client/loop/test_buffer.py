"""ActionBuffer and the seam: replace vs append, jump measured raw, blending only where it means something."""

from __future__ import annotations

from sequence_ai._loop._buffer import ActionBuffer
from sequence_ai._loop._stitch import blend_seam, is_absolute_space, seam_jump


def test_install_replaces_the_buffer_at_lookahead_one():
    buffer = ActionBuffer()
    buffer.install([[1.0], [2.0], [3.0]], append=False)
    buffer.pop()
    buffer.install([[9.0], [8.0]], append=False)
    assert len(buffer) == 2 and buffer.pop() == [9.0]


def test_install_appends_when_holding_several_chunks():
    buffer = ActionBuffer()
    buffer.install([[1.0]], append=True)
    buffer.install([[2.0]], append=True)
    assert [buffer.pop(), buffer.pop()] == [[1.0], [2.0]]


def test_buffer_clear_drops_every_row():
    buffer = ActionBuffer()
    buffer.install([[1.0], [2.0]], append=False)
    buffer.clear()
    assert len(buffer) == 0 and buffer.last() is None


def test_seam_jump_is_the_largest_per_dimension_distance():
    assert seam_jump([0.0, 1.0], [0.5, -1.0]) == 2.0


def test_seam_jump_is_none_for_width_mismatch_or_no_previous_action():
    assert seam_jump([0.0], [0.0, 1.0]) is None
    assert seam_jump(None, [0.0]) is None


def test_blend_seam_ramps_linearly_out_of_the_last_action():
    rows = [[1.0], [1.0], [1.0], [1.0]]
    blended = blend_seam(rows, [0.0], 2)
    assert blended == [[1 / 3], [2 / 3], [1.0], [1.0]]
    assert rows[0] == [1.0]  # the input is not modified


def test_blend_seam_leaves_rows_alone_on_width_mismatch():
    rows = [[1.0, 2.0]]
    assert blend_seam(rows, [0.0], 3) == rows


def test_only_absolute_action_spaces_are_blendable():
    assert is_absolute_space("joint_absolute") and is_absolute_space("joint_position")
    assert is_absolute_space("EE_ABSOLUTE")
    assert not is_absolute_space("joint_delta") and not is_absolute_space(None)
