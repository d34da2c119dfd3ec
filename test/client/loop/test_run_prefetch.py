"""Prefetch, underruns, pacing, the seam and lookahead, against the local worker."""

from __future__ import annotations

import time

import pytest
from _loop_robot import PERIOD, Robot, observation, policy_for, run_kwargs


def test_prefetch_hides_300ms_latency_with_zero_underruns_over_90_actions(platform):
    platform.fault("latency", ms=300)
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=90)
        estimate = policy.progress().refill_latency_s
    assert out.reason == "completed" and out.actions == 90
    assert out.underruns == 0 and robot.underruns == [], out
    assert 0.25 < estimate < 0.6


def test_each_prefetch_starts_at_the_first_tick_its_lead_allows(platform):
    # §7.7: the next chunk's request starts once the buffered motion is down to the lead (1.25 ×
    # the latency estimate + 2 deviations + a period): not a tick later, which eats into its
    # margin, and not a tick earlier, which sends an older observation. The loop skips the
    # top-up on ticks where it cannot start one; this pins that it never skips the one that can.
    # (The appending rule's: taking over, requests go by the cadence, test_takeover_run.py.)
    platform.fault("latency", ms=150, jitter=0.3)
    robot = Robot()
    sends = []
    with policy_for(platform) as policy:
        refills = policy._refills
        submit = refills.submit

        def recording(observation, **kwargs):
            # what is queued: rows buffered plus a window for every request already in flight
            queued = len(refills.buffer) + len(refills.in_flight) * refills.steps_per_chunk
            sends.append((queued, refills.latency.lead_s(1 / PERIOD), refills.steps_per_chunk))
            return submit(observation, **kwargs)

        refills.submit = recording
        out = policy.run(**run_kwargs(robot), max_actions=90, take_over=False)
    prefetches = [(buffered, lead, per_chunk) for buffered, lead, per_chunk in sends if buffered > 0]
    assert out.underruns == 0 and len(prefetches) >= 8, (out, sends)
    for buffered, lead, per_chunk in prefetches:
        assert buffered * PERIOD <= lead, f"sent with {buffered} rows left, lead {lead:.3f} s: too early"
        assert buffered + 1 >= per_chunk or (buffered + 1) * PERIOD > lead, \
            f"sent with {buffered} rows left, lead {lead:.3f} s: a tick late"


def test_refill_estimate_leaves_out_a_slow_admission(platform):
    # The first request pays a 1.5 s admission (a cold gateway); the worker answers in ~0.1 s.
    platform.fault("latency", ms=1500, route="connect", count=1)
    platform.fault("latency", ms=100)
    robot = Robot()
    estimates = []
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot, on_chunk=lambda c: estimates.append(policy.progress().refill_latency_s)),
                         max_actions=30)
    assert estimates[0] is not None and estimates[0] < 0.5, estimates  # one outlier would have made it ~1.6 s
    assert max(estimates) < 0.5 and out.underruns == 0


@pytest.mark.parametrize("take_over", [None, False])
def test_predict_is_no_sample_but_seeds_the_estimate_so_a_following_run_never_stalls(platform, take_over):
    # docs/PROTOCOL.md §7.7: predict() is no sample — the first sample of the run replaces what it took —
    # but it is the best guess there is: the 0.20.0 client, with no estimate, refills only once
    # predict()'s rows are played and stalls once; this one times its first request by it.
    platform.fault("latency", ms=100)
    robot = Robot()
    with policy_for(platform) as policy:
        policy.predict(observation())
        seeded = policy.progress().refill_latency_s
        assert seeded is not None and seeded >= 0.09, seeded
        out = policy.run(**run_kwargs(robot), max_actions=16, take_over=take_over)
    assert out.reason == "completed" and out.underruns == 0, out


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
    # No bursts: the pacer lets no wait end less than half a period after the one before, even
    # after a late wake-up on a loaded machine (test_pacing.py pins that on its own clock). The
    # act follows the wait after the loop's own work on this thread, which a busy machine can
    # delay by different amounts, hence a quarter here (a burst, as before the rule, is ~0).
    assert min(gaps) > 0.25 * PERIOD, [round(g / PERIOD, 2) for g in gaps]


def test_after_a_short_stall_the_next_action_waits_a_full_period(platform):
    # Two-row chunks (0.133 s) and a 170 ms refill: every refill stalls about half a period.
    # Catching up on the old schedule would play the row after each stall half a period early.
    platform.fault("latency", ms=170)
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=16, open_loop_horizon=2, lookahead=1)
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
        out = policy.run(**run_kwargs(robot), max_actions=16, on_chunk=lambda c: sizes.append(policy.buffered),
                         take_over=False)  # taking over, a chunk's later rows stay buffered (test_takeover_run.py)
    assert out.chunks == 2 and sizes[0] == 8


def test_open_loop_horizon_override_cuts_chunks_shorter(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=12, open_loop_horizon=4, take_over=False)
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
    # stitch="none": the seam is smoothed there (a continued seam never is, so under the default
    # the comparison could not fail), and each chunk plays from its first row whenever it arrived;
    # continued, the row a chunk enters at depends on how long its request took, which differs
    # between two runs on a busy machine (seen: one row later), smoothing or not.
    plain, smoothed = Robot(), Robot()
    with policy_for(platform, seed=3) as policy:
        policy.run(**run_kwargs(plain), max_actions=16, stitch="none")
    with policy_for(platform, seed=3) as policy:
        policy.run(**run_kwargs(smoothed), max_actions=16, stitch="none", smooth_seam=4)
    assert len(plain.actions) == 16 and smoothed.actions == plain.actions


def test_smooth_seam_ramps_absolute_chunks_out_of_the_last_action():
    from sequence_ai._loop._stitch import blend_seam

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
    served = [r["worker_ms"] for r in platform.requests()]
    assert len(served) >= 10 and min(served) >= 120, f"the worker did not take the injected latency: {served}"


def _cosmos_observation():
    """cosmos3-edge-policy-droid: three views at 640×360, absolute joint targets."""
    import base64
    import io

    from PIL import Image

    from sequence_ai import ImageFrame, Observation, Proprioception

    buffer = io.BytesIO()
    Image.new("RGB", (640, 360), (80, 120, 160)).save(buffer, format="JPEG", quality=90)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return Observation(images=[ImageFrame(view=v, data=data) for v in ("exterior_1", "exterior_2", "wrist_left")],
                       proprioception=Proprioception(joint_positions=[0.3] * 7, gripper=[0.0]),
                       instruction="pick up the cup")


def test_smooth_seam_in_a_run_ramps_each_new_absolute_chunk_never_the_first_and_jump_is_measured_before(platform):
    obs, acted, chunks = _cosmos_observation(), [], []
    with policy_for(platform, model="cosmos3-edge-policy-droid") as policy:
        out = policy.run(observe=lambda: obs, act=acted.append, validate=lambda a: True, max_actions=24,
                         open_loop_horizon=8, prefetch=False, smooth_seam=3, on_chunk=chunks.append, progress=False,
                         stitch="none")  # the reference's ramp, on the rows as they come
    assert out.reason == "completed" and len(chunks) == 3 and out.action_space == "joint_absolute"
    assert acted[:8] == [list(r) for r in chunks[0].steps[:8]]  # the first chunk is never blended
    jumps = []
    for k in (1, 2):
        last, rows = acted[8 * k - 1], chunks[k].steps
        jumps.append(max(abs(a - b) for a, b in zip(rows[0], last)))
        for i in range(3):
            w = (i + 1) / 4
            assert acted[8 * k + i] == pytest.approx([(1 - w) * a + w * b for a, b in zip(last, rows[i])])
        assert acted[8 * k + 3:8 * k + 8] == [list(r) for r in rows[3:8]]
    assert max(jumps) > 0.01  # the stand-in restarts from the observed pose: a real seam
    assert out.max_seam_jump == pytest.approx(max(jumps))  # before blending, not the ramp's small step



def test_an_on_underrun_taking_no_argument_is_a_hold_called_when_the_buffer_runs_dry(platform):
    platform.fault("latency", ms=250)
    robot, held_at = Robot(), []
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot, on_underrun=lambda: held_at.append(time.monotonic())),
                         max_actions=24, prefetch=False)
    assert out.underruns == 2 and len(held_at) == 2  # the stalls after rows 8 and 16
    for k, at in zip((8, 16), held_at):
        before, after = robot.act_times[k - 1], robot.act_times[k]
        assert before < at < after
        assert after - at >= 0.2  # at the start of the ~0.25 s wait, not at its end


def test_an_on_underrun_needing_two_arguments_is_refused_at_run(platform):
    robot = Robot()
    with policy_for(platform) as policy, pytest.raises(TypeError, match="on_underrun"):
        policy.run(**run_kwargs(robot, on_underrun=lambda a, b: None), max_actions=4)
