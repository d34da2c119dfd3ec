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


def test_observe_validate_act_and_callbacks_run_on_the_calling_thread(platform):
    import threading

    robot = Robot()
    threads = set()

    def note(fn):
        def wrapped(*args):
            threads.add(threading.get_ident())
            return fn(*args)
        return wrapped

    with policy_for(platform) as policy:
        policy.run(observe=note(robot.observe), act=note(robot.act), validate=note(lambda a: len(robot.actions) < 18),
                   hold=note(robot.hold), on_chunk=note(lambda c: None), on_status=note(lambda s: None),
                   max_actions=20, progress=False)
    assert threads == {threading.get_ident()}
