"""run()/act() against the local platform over pinned TLS: the happy paths."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

from _loop_robot import Robot, policy_for, run_kwargs


def test_run_completes_max_actions_without_hold(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=20)
    assert out.reason == "completed" and not out.stopped_early
    assert out.actions == 20 == len(robot.actions)
    assert robot.holds == 0
    assert out.chunks >= 3  # 8 rows per chunk (open_loop_horizon)
    assert str(out).startswith("RunOutcome(20 actions over ") and str(out).endswith(", completed)")
