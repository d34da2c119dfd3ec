"""Joining a chunk to the motion in progress (`_stitch.py`), on rows built here: each property is
checked where it matters — above the window, where no row of an arriving chunk is for the present."""

from __future__ import annotations

import pytest

from sequence_ai._loop._stitch import Action, RowKind, Stitcher

STEP = 0.4 / 15  # the stand-in's speed limit, rad per period
ABSOLUTE = RowKind(absolute=True, displacement=False, joints=2)
DELTA = RowKind(absolute=False, displacement=True, joints=2)
VELOCITY = RowKind(absolute=False, displacement=False, joints=None)


def steady(start: float, rows: int = 15, step: float = STEP):
    """A chunk moving both joints at constant speed from `start`, plus a gripper column."""
    return [[start + (i + 1) * step, start + (i + 1) * step, 0.7] for i in range(rows)]


def approach(start: float, goal: float, rows: int = 15, gain: float = 1.5, hz: float = 15.0):
    """A chunk slowing down toward `goal` (a speed-limited first-order approach, as the stand-in)."""
    q, out = start, []
    for _ in range(rows):
        q += max(-STEP, min(STEP, gain * (goal - q) / hz))
        out.append([q, q, 0.0])
    return out


def played(rows):
    return [float(a[0]) for a in rows]


def test_a_late_absolute_chunk_continues_the_motion_instead_of_stepping_back():
    # The arm has moved 12 periods since the chunk's observation at 0.0 (above the 8-row window).
    last = Action([12 * STEP, 12 * STEP, 0.7], 0)
    join = Stitcher("continue", 8, 0).join(steady(0.0), ABSOLUTE, late=12, last=last, q_obs=[0.0, 0.0],
                                           first_of_run=False)
    targets = [12 * STEP, *played(join.rows)]
    steps = [b - a for a, b in zip(targets, targets[1:])]
    assert len(join.rows) == 8 and steps == pytest.approx([STEP] * 8)
    assert join.raw_first[0] == pytest.approx(8 * STEP)  # the raw row it starts from: 4 steps behind


def offsets_after_a_seam(offset: float):
    """How far each stitched target is from the chunk's own position for its moment (÷ `offset`), when
    the arm was commanded `offset` from where a slowing chunk puts it (the rows played are the ones
    for the moment: late = 7 of 15, so only the pull moves the offset)."""
    chunk, late = approach(0.8, 1.0), 7
    here = chunk[late - 1][0] + offset
    join = Stitcher("continue", 8, 0).join(chunk, ABSOLUTE, late=late, last=Action([here, here, 0.0], 0),
                                           q_obs=[0.8, 0.8], first_of_run=False)
    targets = played(join.rows)
    assert all(b > a for a, b in zip([here, *targets], targets)), "the arm keeps moving the chunk's way"
    return [(t - chunk[late + k][0]) / offset for k, t in enumerate(targets)]


def test_an_arm_trailing_the_chunk_catches_up_within_a_few_rows():
    # The arm is commanded 10 mrad short of where the chunk puts it (on a moving goal, each new chunk
    # says "further on"): after 4 rows less than a fifth of that is left, long before the next chunk
    # takes over (about 8 rows at 0.7 s), so the arm does not trail a moving goal by what each seam
    # leaves behind.
    left = offsets_after_a_seam(-0.01)
    assert all(0.0 <= b <= a for a, b in zip([1.0, *left], left)), left
    assert left[3] < 0.2, left


def test_an_arm_ahead_of_a_stale_chunk_is_eased_back_not_braked():
    # The arm went 10 mrad further than the chunk (older, faster plans): braking it onto a stale
    # position would only slow the approach to the goal, so the offset is taken out over the window:
    # half of it is still there after 4 rows, all but a tenth by its end.
    left = offsets_after_a_seam(0.01)
    assert all(0.0 <= b <= a for a, b in zip([1.0, *left], left)), left
    assert left[3] > 0.4 and left[-1] < 0.1, left


def test_the_same_chunk_as_it_comes_steps_the_arm_back():
    last = Action([12 * STEP, 12 * STEP, 0.7], 0)
    join = Stitcher("none", 8, 0).join(steady(0.0), ABSOLUTE, late=12, last=last, q_obs=[0.0, 0.0],
                                       first_of_run=False)
    assert played(join.rows)[0] - 12 * STEP == pytest.approx(-11 * STEP)


def test_align_skips_the_rows_already_past_and_keeps_at_least_one():
    below = Stitcher("align", 8, 0).join(steady(0.0), ABSOLUTE, late=3, last=None, q_obs=None, first_of_run=True)
    above = Stitcher("align", 8, 0).join(steady(0.0), ABSOLUTE, late=12, last=None, q_obs=None, first_of_run=True)
    assert [a.row for a in below.rows] == [3, 4, 5, 6, 7]
    assert [a.row for a in above.rows] == [7]


@pytest.mark.parametrize("start", [0.55, 0.6, 0.65])
def test_a_slowing_chunk_is_never_followed_past_where_it_stops(start):
    # The observation was taken short of the goal; the arm has since moved on at full speed (an
    # older plan), so it is already near the goal: replaying the chunk's steps from there would
    # overshoot, the stitched motion slows to a stop short of where the chunk is heading.
    goal = 1.0
    chunk = approach(start, goal)
    here = start + 12 * STEP
    join = Stitcher("continue", 8, 0).join(chunk, ABSOLUTE, late=12, last=Action([here, here, 0.0], 0),
                                           q_obs=[start, start], first_of_run=False)
    targets = played(join.rows)
    assert max(targets) <= goal + 1e-9
    assert all(b >= a - 1e-12 for a, b in zip([here, *targets], targets)), "never a step back"
    replayed = [here + (r[0] - chunk[6][0]) for r in chunk[7:15]]
    assert max(replayed) > goal  # what the unpulled, unbounded continuation would do


def test_displacement_rows_keep_their_values_and_carry_the_reference_that_continues_them():
    # joint_delta rows (cumulative from the observation's joints): a velocity controller reads them
    # as they are, a position controller adds q_ref; the stitch changes only q_ref.
    q_obs = [0.5, 0.5]
    rows = [[(i + 1) * STEP, (i + 1) * STEP, 1.0] for i in range(15)]
    last = Action([9 * STEP, 9 * STEP, 1.0], 8, q_ref=[0.5 + 3 * STEP] * 2)  # its target: 0.5 + 12 steps
    join = Stitcher("continue", 8, 0).join(rows, DELTA, late=12, last=last, q_obs=q_obs, first_of_run=False)
    assert [list(a) for a in join.rows] == [rows[i] for i in range(7, 15)]
    targets = [a.target(2)[0] for a in join.rows]
    assert [b - a for a, b in zip([0.5 + 12 * STEP, *targets], targets)] == pytest.approx([STEP] * 8)


def test_velocity_rows_are_only_taken_from_the_moment_being_played():
    rows = [[float(i), 0.0] for i in range(15)]
    join = Stitcher("continue", 8, 0).join(rows, VELOCITY, late=3, last=Action([2.0, 0.0], 2), q_obs=None,
                                           first_of_run=False)
    assert [a[0] for a in join.rows] == [float(i) for i in range(3, 11)] and join.rows[0].q_ref is None


def test_the_gripper_column_of_absolute_rows_is_played_as_it_comes():
    chunk = steady(0.0)
    chunk[8][2] = 0.1
    join = Stitcher("continue", 8, 0).join(chunk, ABSOLUTE, late=8, last=Action([8 * STEP, 8 * STEP, 0.7], 0),
                                           q_obs=[0.0, 0.0], first_of_run=False)
    assert [a[2] for a in join.rows] == [row[2] for row in chunk[7:15]]


def test_a_chunk_that_arrives_in_time_plays_its_rows_for_the_present():
    # Below the window, continuing and aligning agree: the rows for the present, unchanged.
    last = Action([3 * STEP, 3 * STEP, 0.7], 0)
    join = Stitcher("continue", 8, 0).join(steady(0.0), ABSOLUTE, late=3, last=last, q_obs=[0.0, 0.0],
                                           first_of_run=False)
    assert [a.row for a in join.rows] == list(range(3, 11))
    assert played(join.rows) == pytest.approx([row[0] for row in steady(0.0)[3:11]])


def test_smooth_seam_ramps_displacement_targets_and_never_their_values():
    rows = [[(i + 1) * STEP, (i + 1) * STEP, 0.0] for i in range(8)]
    last = Action([0.0, 0.0, 0.0], 7, q_ref=[1.0, 1.0])  # its target: 1.0, far from the new chunk's 0.0
    join = Stitcher("none", 8, 3).join(rows, DELTA, late=0, last=last, q_obs=[0.0, 0.0], first_of_run=False)
    assert [list(a) for a in join.rows] == rows
    targets = [a.target(2)[0] for a in join.rows]
    assert targets[:3] == pytest.approx([(1 - w) * 1.0 + w * rows[i][0] for i, w in enumerate((0.25, 0.5, 0.75))])
    assert targets[3:] == pytest.approx([row[0] for row in rows[3:]])


def test_a_continued_seam_is_not_ramped_even_when_asked():
    # smooth_seam ramps out of the last target as a fixed point: on a seam that is already
    # continuous it would stall the first rows and then step twice as far to catch up.
    last = Action([12 * STEP, 12 * STEP, 0.7], 0)
    plain = Stitcher("continue", 8, 0).join(steady(0.0), ABSOLUTE, late=12, last=last, q_obs=[0.0, 0.0],
                                            first_of_run=False)
    asked = Stitcher("continue", 8, 4).join(steady(0.0), ABSOLUTE, late=12, last=last, q_obs=[0.0, 0.0],
                                            first_of_run=False)
    assert played(asked.rows) == played(plain.rows)
