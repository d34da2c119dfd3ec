"""The newest chunk taking over on arrival (`_takeover.py`) and the request budget (`_budget.py`),
on rows built here, at pi05-droid's numbers: 15 rows at 15 Hz, an 8-row window, 0.7 s latency."""

from __future__ import annotations

import pytest

from sequence_ai._errors import InvalidArgument
from sequence_ai._loop._budget import (
    RequestCadence,
    budget_for_lateness,
    check_budget,
    default_budget,
    expected_age_s,
    expected_lateness_s,
    in_flight_for,
)
from sequence_ai._loop._stitch import Action, RowKind, Stitcher
from sequence_ai._loop._takeover import Arrival, lateness_s, moment_of, rows_to_keep, take_over

HZ, ROWS, WINDOW = 15.0, 15, 8
STEP = 0.4 / HZ  # the stand-in's speed limit, rad per period
ABSOLUTE = RowKind(absolute=True, displacement=False, joints=2)
DELTA = RowKind(absolute=False, displacement=True, joints=2)


def steady(start: float, rows: int = ROWS):
    """Absolute rows moving both joints at constant speed from `start`, plus a gripper column."""
    return [[start + (i + 1) * STEP, start + (i + 1) * STEP, 0.5] for i in range(rows)]


def buffered_from(observed_at: float, rows: range, start: float = 0.0):
    """Rows of an older chunk still waiting to play, as the loop buffers them."""
    out = []
    for i in rows:
        action = Action([start + (i + 1) * STEP, start + (i + 1) * STEP, 0.5], i)
        action.observed_at = observed_at
        out.append(action)
    return out


def targets(rows):
    return [float(a[0]) for a in rows]


def test_a_chunk_that_arrives_plays_at_once_instead_of_after_the_rows_of_older_chunks():
    # An older chunk (observed at 9.467) still has 8 rows buffered when the one observed at 10.0
    # lands at 10.7: appended, its first row would play after those 8; taking over, it plays now.
    older = buffered_from(9.467, range(7, 15), start=-8 * STEP)
    last = Action([14 * STEP - 8 * STEP] * 2 + [0.5], 6)
    taken = take_over(older, Arrival(steady(0.0), ABSOLUTE, 10.0, [0.0, 0.0]), last=last, now=10.7, hz=HZ, keep=8)
    assert taken is not None and taken.replaced == 8
    assert all(a.observed_at == 10.0 for a in taken.rows)  # none of the older chunk's rows is left
    appended = Stitcher("continue", WINDOW, 0).join(steady(0.0), ABSOLUTE, late=int(0.7 * HZ) + len(older),
                                                    last=older[-1], q_obs=[0.0, 0.0], first_of_run=False)
    for action in appended.rows:
        action.observed_at = 10.0
    # the rows taken are for earlier moments than the same chunk's rows after the older ones
    assert taken.rows[0].row <= appended.rows[0].row
    assert lateness_s(taken.rows[0], 10.7, HZ) < lateness_s(appended.rows[0], 10.7 + len(older) / HZ, HZ)


def test_rows_are_taken_for_the_moment_being_played_when_the_chunk_reaches_far_enough():
    # 0.4 s after its observation the chunk's row 6 is for now; 9 rows are left, 4 are needed
    taken = take_over([], Arrival(steady(0.0), ABSOLUTE, 10.0), last=None, now=10.4, hz=HZ, keep=4)
    assert taken.row_now == 6 and taken.start == 6 and len(taken.rows) == ROWS - 6
    assert lateness_s(taken.rows[0], 10.4, HZ) == pytest.approx(0.0)


def test_above_the_window_the_rows_kept_until_the_next_chunk_start_that_much_earlier():
    # 0.72 s after its observation the row for now is 11; 8 rows must remain until the next chunk:
    # rows 7-14, each played 0.72 - 7/15 s after its moment (the issue's least lateness at one
    # request per window, L - (H - W)/hz)
    taken = take_over([], Arrival(steady(0.0), ABSOLUTE, 10.0), last=None, now=10.72, hz=HZ, keep=8)
    assert taken.row_now == 11 and [a.row for a in taken.rows] == list(range(7, 15))
    for k, action in enumerate(taken.rows):
        assert lateness_s(action, 10.72 + k / HZ, HZ) == pytest.approx(0.72 - 7 / HZ)
    assert lateness_s(taken.rows[0], 10.72, HZ) == pytest.approx(expected_lateness_s(0.72, WINDOW / HZ, ROWS / HZ))


def test_a_chunk_whose_rows_are_all_past_still_supplies_the_rows_to_keep():
    taken = take_over([], Arrival(steady(0.0), ABSOLUTE, 10.0), last=None, now=11.5, hz=HZ, keep=20)
    assert taken.row_now > ROWS and [a.row for a in taken.rows] == list(range(ROWS))


@pytest.mark.parametrize("late_s", [0.3, 0.7, 0.9])
def test_the_seam_never_steps_the_arm_back_nor_jumps(late_s):
    # The arm moved on while the chunk was computed: its rows start behind the last target.
    last = Action([late_s * HZ * STEP] * 2 + [0.5], 0)
    taken = take_over([], Arrival(steady(0.0), ABSOLUTE, 10.0, [0.0, 0.0]), last=last, now=10.0 + late_s, hz=HZ,
                      keep=8)
    path = [float(last[0]), *targets(taken.rows)]
    steps = [b - a for a, b in zip(path, path[1:])]
    assert min(steps) > 0  # forward, never back
    assert max(steps) <= 1.5 * STEP + 1e-12  # and no jump: at most half a step more than the chunk's own


def test_the_pull_toward_the_chunk_never_moves_a_joint_faster_than_the_chunk_does():
    # The arm is far behind where the chunk puts it (0.5 rad: a stale observation, a slow arm):
    # the pull toward the chunk's own position would take big steps; each is capped at the chunk's
    # fastest (STEP), so the arm catches up over time instead of lurching.
    last = Action([-0.5, -0.5, 0.5], 0)
    taken = take_over([], Arrival(steady(0.0), ABSOLUTE, 10.0, [0.0, 0.0]), last=last, now=10.7, hz=HZ, keep=8)
    path = [float(last[0]), *targets(taken.rows)]
    steps = [b - a for a, b in zip(path, path[1:])]
    assert max(steps) <= STEP + 1e-12, [round(s / STEP, 2) for s in steps]
    assert min(steps) > 0  # and it still moves on


def test_displacement_rows_keep_their_values_and_their_targets_continue_the_last_one():
    # joint_delta: row i is the displacement from the observation's joints (0.1, 0.1)
    rows = [[(i + 1) * STEP, (i + 1) * STEP, 0.5] for i in range(ROWS)]
    last = Action([12 * STEP, 12 * STEP, 0.5], 11, q_ref=[0.1, 0.1])
    taken = take_over([], Arrival(rows, DELTA, 10.0, [0.1, 0.1, 0.0]), last=last, now=10.7, hz=HZ, keep=8)
    for action in taken.rows:
        assert list(action) == pytest.approx(rows[action.row])  # the rows as the model sent them
    path = [last.target(2)[0], *(a.target(2)[0] for a in taken.rows)]
    assert min(b - a for a, b in zip(path, path[1:])) > 0


def test_rows_left_by_predict_are_replaced_and_a_chunk_older_than_the_buffer_replaces_nothing():
    from_predict = [[0.1, 0.1, 0.5]] * 8  # plain rows: they say nothing of their observation
    taken = take_over(from_predict, Arrival(steady(0.0), ABSOLUTE, 10.0), last=None, now=10.7, hz=HZ, keep=8)
    assert taken is not None and taken.replaced == 8
    newer = buffered_from(10.5, range(7, 15))
    assert take_over(newer, Arrival(steady(0.0), ABSOLUTE, 10.0), last=None, now=10.7, hz=HZ, keep=8) is None


def test_lateness_is_the_time_played_less_the_moment_its_row_was_for():
    action = Action([0.0], 9)
    assert moment_of(action, HZ) is None and lateness_s([0.0], 1.0, HZ) is None  # no observation: not known
    action.observed_at = 100.0
    assert moment_of(action, HZ) == pytest.approx(100.6)
    assert lateness_s(action, 101.0, HZ) == pytest.approx(0.4)
    assert lateness_s(action, 100.5, HZ) == pytest.approx(-0.1)  # played early: negative, not hidden


def test_the_rows_to_keep_reach_the_moment_the_next_chunk_can_be_counted_on():
    assert rows_to_keep(10.0, None, HZ, WINDOW) == WINDOW  # nothing in flight: a window
    assert rows_to_keep(10.0, 10.4, HZ, WINDOW) == 6  # ticks at 10.0, 10.067, ... 10.333
    assert rows_to_keep(10.0, 10.41, HZ, WINDOW) == 7
    assert rows_to_keep(10.0, 9.0, HZ, WINDOW) == 1  # overdue: still the row for now


# -- the request budget ---------------------------------------------------------------------


def due(budget, now, *, last_started=None, in_flight=0, buffered=8, lead_s=0.94, latency_s=0.7):
    """RequestCadence.due as a run far from its end sees it, the last request started at `last_started`."""
    cadence = RequestCadence(budget)
    if last_started is not None:
        cadence.started(last_started)
    return cadence.due(now, actions_left=10_000, deadline=None, in_flight=in_flight, buffered=buffered, hz=HZ,
                       lead_s=lead_s, latency_s=latency_s)


def test_the_default_budget_is_one_request_per_window_played():
    assert default_budget(HZ, WINDOW) == pytest.approx(1.875)
    cadence = RequestCadence(default_budget(HZ, WINDOW))
    starts = []
    for tick in range(150):  # 10 s of ticks, a request always on its way above the window
        now = tick / HZ
        if cadence.due(now, actions_left=10_000, deadline=None, in_flight=1, buffered=8, hz=HZ, lead_s=0.94,
                       latency_s=0.7):
            cadence.started(now)
            starts.append(now)
    assert len(starts) == pytest.approx(10 * 1.875, abs=1)


def test_a_larger_budget_starts_requests_sooner_whatever_is_buffered():
    assert not due(1.875, 10.3, last_started=10.0, in_flight=2, buffered=15, lead_s=0.9)
    assert due(4.0, 10.3, last_started=10.0, in_flight=2, buffered=15, lead_s=0.9)
    assert due(1.875, 10.0, buffered=15, lead_s=None, latency_s=None)  # the first request


def test_the_arm_never_waits_on_the_budget_for_a_request_it_needs():
    # nothing on its way and the rows buffered (7: 0.47 s) down to the lead: a request now, budget or not
    assert due(0.1, 10.1, last_started=10.0, in_flight=0, buffered=7, lead_s=0.94)
    assert not due(0.1, 10.1, last_started=10.0, in_flight=0, buffered=15, lead_s=0.94)  # 1 s buffered: not yet
    assert not due(0.1, 10.1, last_started=10.0, in_flight=1, buffered=7, lead_s=0.94)  # one is on its way
    assert not due(0.1, 10.1, last_started=10.0, in_flight=0, buffered=7, lead_s=None)  # no estimate yet


def test_the_budget_physics_of_the_issue():
    assert expected_age_s(0.7, WINDOW / HZ) == pytest.approx(0.967, abs=1e-3)  # L + W/2
    assert expected_lateness_s(0.7, WINDOW / HZ, ROWS / HZ) == pytest.approx(0.233, abs=1e-3)
    assert expected_lateness_s(0.7, 0.3, ROWS / HZ) == 0.0  # I <= H/hz - L: rows at their moment
    assert budget_for_lateness(0.7, ROWS / HZ) == pytest.approx(1 / 0.16)  # the issue's 1/(H/hz - 1.2 L)
    assert budget_for_lateness(0.9, ROWS / HZ) is None  # 1.2 L past the chunk: no rate can
    assert in_flight_for(0.7, 1 / 0.16) == 5  # more than today's cap of 4 requests in flight


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), "3", True])
def test_a_budget_that_is_not_a_positive_rate_is_one_clear_error(value):
    with pytest.raises(InvalidArgument, match="request_budget"):
        check_budget(value)
    assert check_budget(None) is None and check_budget(4) == 4.0


def ticking(cadence, seconds: float, *, latency: float = 0.7, hz: float = HZ):
    """Starts on 15 Hz ticks whatever the cadence says is due, as the loop does (each answered
    `latency` later); returns the start times."""
    starts, in_flight = [], []
    for k in range(int(seconds * hz)):
        now = k / hz
        in_flight = [t for t in in_flight if t + latency > now]
        if cadence.due(now, actions_left=10_000, deadline=None, in_flight=len(in_flight), buffered=10, hz=hz,
                       lead_s=0.9, latency_s=latency):
            cadence.started(now)
            starts.append(now)
            in_flight.append(now)
    return starts


@pytest.mark.parametrize("budget", [1.875, 4.0, 6.25])
def test_the_cadence_spends_the_budget_though_requests_start_on_ticks(budget):
    from sequence_ai._loop._budget import RequestCadence

    starts = ticking(RequestCadence(budget), 60.0)
    # one tick's rounding per request would make 4/s 3.75/s and 6.25/s 5/s at 15 Hz
    assert len(starts) / 60.0 == pytest.approx(budget, rel=0.02), len(starts)
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert min(gaps) >= 1.0 / budget - 1.0 / HZ - 1e-9  # never a burst to catch up


def test_the_cadence_starts_afresh_after_a_gap_and_keeps_to_the_run():
    from sequence_ai._loop._budget import RequestCadence

    cadence = RequestCadence(2.0)
    cadence.started(0.0)
    cadence.started(3.0)  # a long stall: no burst of the requests "missed" meanwhile
    assert cadence.next_start(3.0) == pytest.approx(3.5)
    common = dict(deadline=None, in_flight=0, hz=HZ, lead_s=0.9, latency_s=0.7)
    assert cadence.due(4.0, actions_left=30, buffered=10, **common)
    assert not cadence.due(4.0, actions_left=10, buffered=10, **common)  # the rows buffered end the run
    assert not cadence.due(4.0, actions_left=9, buffered=0, **common)  # its answer would land after the end
    # below 1/budget a refill is not joined by a second request (one slow to come back, a reconnect)
    assert not cadence.due(4.0, actions_left=30, buffered=10, **{**common, "in_flight": 1, "latency_s": 0.3})
    assert cadence.due(4.0, actions_left=30, buffered=10, **{**common, "in_flight": 1})  # 0.7 s: two in flight
