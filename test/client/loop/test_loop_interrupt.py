"""interrupt(): stops wherever the loop is, holds once, is not raised.

The latency itself — interrupt() to hold, goal one control period — is a figure for a quiet
machine: bench/bench_interrupt.py measures it in the same four states (`make bench`). Here the
test process shares a loaded 2-core machine, so each test shows the stop by what the loop did
(no action after the hold, at most the one in progress after the interrupt) and by a bound far
below what the state would take by itself (a 5 s answer, a 30 s warm-up, 300 actions)."""

from __future__ import annotations

import threading
import time

import pytest
from _loop_robot import Robot, observation, policy_for, run_kwargs
from eventually import wait_until

# Expected, documented warnings of the paths these tests drive on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:model is warming", "ignore:the worker changed mid-episode")

# Interrupt to hold, by the hold's own call time: far below each state's own length (see above).
BOUND_S = 2.0


def _run_in_thread(policy, robot, **kwargs):
    box = {}

    def target():
        try:
            box["out"] = policy.run(**run_kwargs(robot), **kwargs)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


def _interrupt_and_time(policy, robot, thread):
    """Seconds from interrupt() to the run's hold() call (when the loop made it, not when this
    thread saw it); the loop acted at most once more (an action in progress) and not after it.
    Timed from when interrupt() had returned: a stamp taken before it would count the actions of
    any time this thread lost between the two to the loop (lenient on the latency, never flaky)."""
    policy.interrupt()
    asked = time.monotonic()
    assert wait_until(lambda: robot.holds > 0, timeout_s=10.0), "hold never ran"
    thread.join(10.0)
    assert sum(t > asked for t in robot.act_times) <= 1, "acted on after the interrupt"
    assert all(t <= robot.hold_times[0] for t in robot.act_times), "acted after the hold"
    return robot.hold_times[0] - asked


def test_interrupt_while_playing_holds_within_one_control_period(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        thread, box = _run_in_thread(policy, robot, max_actions=300)
        assert wait_until(lambda: len(robot.actions) >= 12, timeout_s=10.0)
        latency = _interrupt_and_time(policy, robot, thread)
        assert not thread.is_alive()  # run() has returned: nothing more can act
    out = box["out"]
    assert out.reason == "interrupted" and out.stopped_early
    assert robot.holds == 1
    assert latency <= BOUND_S, f"hold came {latency * 1000:.0f} ms after interrupt()"
    assert policy.buffered == 0


def test_interrupt_during_inflight_fetch_stops_within_one_period(platform):
    platform.fault("latency", ms=5000)
    robot = Robot()
    with policy_for(platform) as policy:
        thread, box = _run_in_thread(policy, robot, max_actions=50)
        # the first fill has reached the worker, which holds its answer for 5 s
        assert wait_until(lambda: platform.arrivals("worker POST /act") >= 1, timeout_s=10.0)
        latency = _interrupt_and_time(policy, robot, thread)
    # let the abandoned request finish on the worker so it does not land in the next test's log
    assert wait_until(lambda: len(platform.requests()) >= 1, timeout_s=20.0)
    assert box["out"].reason == "interrupted" and box["out"].actions == 0
    assert robot.holds == 1
    assert latency <= BOUND_S, f"hold came {latency * 1000:.0f} ms after interrupt()"


def test_interrupt_during_warming_stops_within_one_period(platform):
    platform.fault("warming", seconds=30, eta_s=30)
    robot = Robot()
    with policy_for(platform, startup_timeout_s=300, on_warming=lambda waited, eta: None) as policy:
        thread, box = _run_in_thread(policy, robot, max_actions=50)
        assert wait_until(lambda: policy.progress().warming, timeout_s=5.0)
        latency = _interrupt_and_time(policy, robot, thread)
    assert box["out"].reason == "interrupted"
    assert robot.holds == 1
    assert latency <= BOUND_S, f"hold came {latency * 1000:.0f} ms after interrupt()"


def test_interrupt_during_reconnect_stops_within_one_period(platform):
    platform.fault("drop")  # every /act answer is cut off: the client keeps reconnecting
    robot = Robot()
    with policy_for(platform) as policy:
        thread, box = _run_in_thread(policy, robot, max_actions=50)
        assert wait_until(lambda: len(platform.requests()) >= 2, timeout_s=5.0)  # replayed at least once
        latency = _interrupt_and_time(policy, robot, thread)
    assert box["out"].reason == "interrupted"
    assert robot.holds == 1
    assert latency <= BOUND_S, f"hold came {latency * 1000:.0f} ms after interrupt()"


def test_interrupt_flag_is_cleared_at_the_start_of_the_next_run(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        policy.interrupt()  # between runs: must not cancel the next one
        out = policy.run(**run_kwargs(robot), max_actions=3)
    assert out.reason == "completed" and robot.holds == 0


def test_stale_interrupt_never_aborts_a_later_predict(platform):
    with policy_for(platform) as policy:
        policy.interrupt()
        prediction = policy.predict(observation())
    assert len(prediction.action_chunk) == 15


def test_interrupt_during_a_slow_admission_stops_within_one_period(platform):
    platform.fault("latency", ms=5000, route="connect")
    robot = Robot()
    with policy_for(platform) as policy:
        thread, box = _run_in_thread(policy, robot, max_actions=50)
        # POST /v1/act/connect has reached the gateway, which holds its answer for 5 s
        assert wait_until(lambda: platform.arrivals("gateway POST /v1/act/connect") >= 1, timeout_s=10.0)
        latency = _interrupt_and_time(policy, robot, thread)
        # the abandoned admission is answered before the policy closes
        assert wait_until(lambda: platform.stats().get("gateway", {}).get("POST /v1/act/connect"), timeout_s=20.0)
    assert box["out"].reason == "interrupted" and robot.holds == 1
    assert latency <= BOUND_S, f"hold came {latency * 1000:.0f} ms after interrupt()"
