"""Prefetch, underruns, pacing, the seam and lookahead, against the local worker."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _loop_robot import PERIOD, Robot, policy_for, run_kwargs


def test_prefetch_hides_300ms_latency_with_zero_underruns_over_150_actions(platform):
    platform.fault("latency", ms=300)
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=150)
        estimate = policy.progress().refill_latency_s
    assert out.reason == "completed" and out.actions == 150
    assert out.underruns == 0 and robot.underruns == [], out
    assert 0.25 < estimate < 0.6


def test_without_prefetch_every_refill_stalls_and_is_counted(platform):
    platform.fault("latency", ms=200)
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=24, prefetch=False)
    assert out.reason == "completed"
    assert out.underruns == 2 and len(robot.underruns) == 2  # refills after rows 8 and 16
    assert out.underrun_s >= 0.35 and all(wait >= 0.18 for wait in robot.underruns)
    assert robot.holds == 0


def test_run_paces_actions_at_the_chunk_control_frequency(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        policy.run(**run_kwargs(robot), max_actions=30)
    gaps = [b - a for a, b in zip(robot.act_times, robot.act_times[1:])]
    mean = sum(gaps) / len(gaps)
    assert abs(mean - PERIOD) < 0.01, mean
    assert min(gaps) > 0.5 * PERIOD  # no bursts


def test_after_a_short_stall_the_next_action_waits_a_full_period(platform):
    # Two-row chunks (0.133 s) and a 170 ms refill: every refill stalls about half a period.
    # Catching up on the old schedule would play the row after each stall half a period early.
    platform.fault("latency", ms=170)
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=16, open_loop_horizon=2)
    assert out.underruns >= 4, out
    gaps = [b - a for a, b in zip(robot.act_times, robot.act_times[1:])]
    assert min(gaps) > 0.8 * PERIOD, [round(g / PERIOD, 2) for g in gaps]


def test_run_waits_on_the_given_pacer_once_between_actions(platform):
    class CountingPacer:
        def __init__(self):
            self.periods = []

        def wait(self, period_s, interrupted):
            self.periods.append(period_s)

    pacer = CountingPacer()
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=10, pacer=pacer)
    assert out.actions == 10 and len(pacer.periods) == 9
    assert all(abs(p - PERIOD) < 1e-9 for p in pacer.periods)


def test_chunks_are_cut_to_the_open_loop_horizon(platform):
    robot = Robot()
    sizes = []
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=16, on_chunk=lambda c: sizes.append(policy.buffered))
    assert out.chunks == 2 and sizes[0] == 8


def test_open_loop_horizon_override_cuts_chunks_shorter(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=12, open_loop_horizon=4)
    assert out.chunks == 3


def test_lookahead_two_holds_two_chunks(platform):
    robot = Robot()
    peak = []
    with policy_for(platform) as policy:
        policy.run(**run_kwargs(robot), max_actions=40, lookahead=2,
                   on_chunk=lambda c: peak.append(policy.buffered))
    assert max(peak) > 8


def test_max_seam_jump_is_reported_for_each_run(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=20)
    assert out.max_seam_jump is not None and out.max_seam_jump >= 0.0
    assert out.action_space == "joint_delta"


def test_smooth_seam_leaves_delta_chunks_untouched(platform):
    plain, smoothed = Robot(), Robot()
    with policy_for(platform, seed=3) as policy:
        policy.run(**run_kwargs(plain), max_actions=16)
    with policy_for(platform, seed=3) as policy:
        policy.run(**run_kwargs(smoothed), max_actions=16, smooth_seam=4)
    assert smoothed.actions == plain.actions


def test_smooth_seam_ramps_absolute_chunks_out_of_the_last_action():
    from sequence_ai._buffer import blend_seam

    rows = [[1.0, 1.0]] * 6
    assert blend_seam(rows, [0.0, 0.0], 3)[:3] == [[0.25, 0.25], [0.5, 0.5], [0.75, 0.75]]


def test_underrun_wait_is_reported_to_on_underrun_and_status(platform):
    platform.fault("latency", ms=150)
    robot = Robot()
    statuses = []
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=16, prefetch=False, on_status=statuses.append)
    assert out.underruns == 1
    assert statuses[0] == "starting" and statuses[-1] == "done"
    assert "waiting" in statuses and statuses.count("running") >= 2


def test_prefetch_rides_out_jittery_latency_without_underruns(platform):
    platform.fault("latency", ms=250, jitter=0.5)  # 125-375 ms, uniformly
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=90)
    assert out.reason == "completed" and out.underruns <= 1, out  # the first refill has no deviation yet
