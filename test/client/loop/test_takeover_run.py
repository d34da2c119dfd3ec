"""run() with the newest chunk taking over on arrival, at pi05-droid's real latency
(0.7 s ±20 %, above the 8-row window) on the local platform. Judged by the client's own clocks: each
Action's `observed_at`, `due_at` and `played_at`, the RunOutcome's counts."""

from __future__ import annotations

import math
import re
import statistics
import threading

import pytest
from _loop_robot import HZ, Robot, policy_for, run_kwargs

from sequence_ai._errors import InvalidArgument
from sequence_ai._loop._stitch import Action

LATENCY_MS = 700
JOINTS = 7


class Watching(Robot):
    """Keeps every Action act() received and, per chunk, the action count when it arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.played = []
        self.arrived_after = []  # actions played when each chunk was installed (on_chunk, the loop's thread)
        self.chunks = []
        self._lock = threading.Lock()

    def act(self, action) -> None:
        super().act(action)
        self.played.append(action)

    def on_chunk(self, chunk) -> None:
        self.arrived_after.append(len(self.played))
        self.chunks.append(chunk)


def run_at_real_latency(platform, actions=120, **kwargs):
    platform.fault("latency", ms=LATENCY_MS, jitter=0.2)
    robot = Watching()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot, on_chunk=robot.on_chunk), max_actions=actions, **kwargs)
    assert out.reason == "completed", out
    return robot, out


@pytest.mark.parametrize("take_over", [None, False])
def test_an_arriving_chunk_plays_at_once_or_after_the_rows_buffered(platform, take_over):
    robot, out = run_at_real_latency(platform, take_over=take_over)
    next_chunks = [robot.played[n].chunk for n in robot.arrived_after[1:] if n < len(robot.played)]
    numbers = list(range(1, 1 + len(next_chunks)))
    assert len(numbers) >= 8, out
    if take_over is None:  # the default: the action after each arrival is the new chunk's first
        assert next_chunks == numbers, next_chunks
        # and the arm keeps moving: the bench's goal is <= 1 % (docs/PERFORMANCE.md); a busy machine's
        # slower refills get room here, far below the ~30 % held of a rule that waited for each chunk
        assert out.underrun_s <= 0.05 * out.elapsed_s, out
    else:  # the appending rule: the older chunk's rows buffered play first, unless none were left
        # (a busy machine's slower refill ran the buffer dry — the action before the arrival was the
        # last its chunk ever played — or its tick came late: by the client's clocks the action after
        # the arrival came more than a period after the one before it). Taking over would cut every
        # older chunk at an arrival, and then fewer than six arrivals would find rows left.
        last_of_chunk = {a.chunk: i for i, a in enumerate(robot.played)}
        dry = [n > 0 and (last_of_chunk[robot.played[n - 1].chunk] == n - 1
                          or robot.played[n].played_at - robot.played[n - 1].played_at > 1.5 / HZ)
               for n in robot.arrived_after[1:] if n < len(robot.played)]
        assert sum(not d for d in dry) >= 6, (dry, out)
        assert all(c < n for c, n, d in zip(next_chunks, numbers, dry) if not d), (next_chunks, dry)
    chunk_order = [a.chunk for a in robot.played]
    assert chunk_order == sorted(chunk_order)  # never back to an older chunk's rows


def test_each_action_says_how_old_and_late_it_is_and_the_outcome_sums_them(platform):
    robot, out = run_at_real_latency(platform)
    moved = [a for a in robot.played if isinstance(a, Action)]
    assert len(moved) == len(robot.played)
    hz = HZ
    for a in moved:
        assert a.played_at is not None and a.observed_at is not None and a.due_at is not None
        assert a.due_at == pytest.approx(a.observed_at + a.row / hz)
        assert a.age_s == pytest.approx(a.played_at - a.observed_at)
        assert a.lateness_s == pytest.approx(a.played_at - a.due_at)
        assert a.age_s >= 0.5  # nothing can be fresher than the latency's low end (0.56 s)
    ages, late = [a.age_s for a in moved], [a.lateness_s for a in moved]
    assert out.age_max_s == pytest.approx(max(ages)) and out.lateness_max_s == pytest.approx(max(late))
    # the outcome's p50 is the lower median, to the millisecond (with an even count, the mean of the
    # two middle values can be tens of ms from either on a busy machine)
    assert out.age_p50_s == pytest.approx(statistics.median_low(ages), abs=0.002)
    assert out.lateness_p50_s == pytest.approx(statistics.median_low(late), abs=0.002)
    # fresher than appending (1.40 s p50 at 0.7 s): L + W/2 ≈ 0.97 s, with room for a busy machine
    assert out.age_p50_s < 1.25, out


def test_the_appending_rule_plays_older_rows_than_taking_over(platform):
    _, taking = run_at_real_latency(platform)
    _, appending = run_at_real_latency(platform, take_over=False)
    assert taking.age_p50_s < appending.age_p50_s - 0.15, (taking, appending)
    # Lateness is not compared here: it follows the refill latency the client measures (rows must
    # last to its 90th percentile), and on a loaded machine one 120-action run of each rule came out
    # at 0.60 against 0.60 s, and 0.60 against 0.53 s. Take-over's lateness (0.40 against 0.67 s at
    # 0.7 s, idle) is judged by make bench's lateness rows.


def requests_per_second(out) -> float:
    return out.chunks / (out.actions / HZ)


def test_the_default_spends_one_request_per_window_and_a_budget_sets_the_rate(platform):
    _, default = run_at_real_latency(platform, actions=150)
    _, more = run_at_real_latency(platform, actions=150, request_budget=4.0)
    assert requests_per_second(default) == pytest.approx(HZ / 8, rel=0.2), default
    assert requests_per_second(more) == pytest.approx(4.0, rel=0.2), more
    assert more.lateness_p50_s < default.lateness_p50_s, (more, default)  # what the credit buys
    assert more.underrun_s <= 0.05 * more.elapsed_s, more  # the bench holds it to 1 %; a busy machine gets room


def test_taking_over_never_moves_a_joint_faster_than_the_chunks_do(platform):
    robot, out = run_at_real_latency(platform, actions=150)
    fastest = [0.0] * JOINTS
    for chunk in robot.chunks:  # joint_delta rows: cumulative displacements from the observation
        rows = [[0.0] * JOINTS] + [row[:JOINTS] for row in chunk.steps]
        for a, b in zip(rows, rows[1:]):
            fastest = [max(f, abs(y - x)) for f, x, y in zip(fastest, a, b)]
    targets = [a.target(JOINTS) for a in robot.played]
    assert all(t is not None for t in targets)
    for before, after in zip(targets, targets[1:]):
        for j, (x, y) in enumerate(zip(before, after)):
            assert abs(y - x) <= fastest[j] + 1e-9, (j, y - x, fastest[j])


@pytest.mark.parametrize("kwargs, named", [
    ({"take_over": True, "lookahead": 1}, "lookahead=1"),
    ({"take_over": True, "stitch": "align"}, "stitch='align'"),
    ({"take_over": True, "prefetch": False}, "prefetch=False"),
    ({"take_over": "yes"}, "take_over"),
    ({"request_budget": 3.0, "take_over": False}, "request_budget"),
    ({"request_budget": 3.0, "lookahead": 2}, "request_budget"),
    ({"request_budget": 0}, "request_budget"),
    ({"request_budget": -1.0}, "request_budget"),
    ({"request_budget": math.nan}, "request_budget"),
    ({"request_budget": "4"}, "request_budget"),
])
def test_a_setting_that_cannot_be_kept_is_refused_before_anything_moves(platform, kwargs, named):
    robot = Robot()
    with policy_for(platform) as policy, pytest.raises(InvalidArgument, match=re.escape(named)):
        policy.run(**run_kwargs(robot), max_actions=10, **kwargs)
    assert robot.actions == [] and robot.observations == [] and robot.holds == 0
