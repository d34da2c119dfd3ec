"""The start of a run() at pi05-droid's real latency (0.7 s ±20 %, above the 8-row window), after
whatever came before it on the same worker (issue #23): the arm must not stop at its start. Judged
by the client's own counters (`RunOutcome.underruns`, `underrun_s`)."""

from __future__ import annotations

import pytest
from _loop_robot import Robot, observation, policy_for, run_kwargs

ACTIONS = 90  # 6 s at 15 Hz: the start and several chunks after it


def warm_up(policy, how: str) -> None:
    if how == "predict":  # what scripts ported from 0.20.0 do first, to warm the connection
        policy.predict(observation())
    elif how == "act":
        robot = Robot()
        policy.act("pick up the cup", robot.observe, robot.act, max_seconds=30.0, max_actions=20,
                   validate=robot.validate, progress=False)


@pytest.mark.parametrize("how", [
    "cold",
    "act",
    "predict",
])
def test_a_run_starts_without_stopping_whatever_came_before_it(platform, how):
    platform.fault("latency", ms=700, jitter=0.2)
    robot = Robot()
    with policy_for(platform) as policy:
        warm_up(policy, how)
        out = policy.run(**run_kwargs(robot), max_actions=ACTIONS)
    assert out.reason == "completed", out
    # The goal is held <= 1 % over 300 actions (make bench); this short run on a machine that
    # may be busy gets 3 %. The fault it pins, two stops at the start (0.7-0.85 s), is 11 % of it.
    assert out.underrun_s <= 0.03 * out.elapsed_s, out
