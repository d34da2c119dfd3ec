"""SCHED_FIFO for the control threads (`realtime_priority`): applied to the calling thread only,
never inherited by the threads it starts, restored after a goal, refused with one warning."""

from __future__ import annotations

import os

import pytest
from fifo_probe import fifo_permitted, in_thread

from sequence_ai_ros.control.realtime import ControlPriority

pytestmark = pytest.mark.ros


def policy_of_this_thread() -> int:
    return os.sched_getscheduler(0) & ~os.SCHED_RESET_ON_FORK


@pytest.mark.skipif(not fifo_permitted(), reason="SCHED_FIFO is not permitted for this user")
def test_the_calling_thread_runs_fifo_until_restored_and_threads_it_starts_do_not():
    warnings: list = []
    priority = ControlPriority(40, warnings.append)

    def goal_thread():
        before = priority.raise_thread()
        during = (policy_of_this_thread(), os.sched_getparam(0).sched_priority)
        child = in_thread(policy_of_this_thread)  # a refill or telemetry thread
        priority.restore(before)
        return during, child, policy_of_this_thread()

    during, child, after = in_thread(goal_thread)
    assert during == (os.SCHED_FIFO, 40)
    assert child == os.SCHED_OTHER
    assert after == os.SCHED_OTHER
    assert warnings == []


def test_priority_zero_asks_for_nothing():
    warnings: list = []
    priority = ControlPriority(0, warnings.append)
    assert in_thread(lambda: (priority.raise_thread(), policy_of_this_thread())) == (None, os.SCHED_OTHER)
    assert warnings == [] and priority.refused is None


def test_a_refusal_warns_once_names_the_parameter_and_is_not_asked_again():
    warnings: list = []
    priority = ControlPriority(100, warnings.append)  # out of SCHED_FIFO's range: the OS refuses
    for _ in range(3):
        assert in_thread(lambda: (priority.raise_thread(), policy_of_this_thread())) == (None, os.SCHED_OTHER)
    assert len(warnings) == 1 and "realtime_priority 100" in warnings[0] and "refused" in warnings[0]
    assert priority.refused
