"""The client's background threads run under SCHED_BATCH, so a woken refill thread does not
preempt the driving thread that holds the GIL (sequence_ai/_fetch.py, docs/CLIENT-LOOP.md)."""

from __future__ import annotations

import os
import threading

import pytest
from _loop_robot import Robot, policy_for, run_kwargs

from sequence_ai._link._fetch import background_thread

pytestmark = pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="SCHED_BATCH is Linux's")


def test_refill_and_telemetry_threads_run_under_sched_batch_and_the_caller_is_untouched(platform):
    robot = Robot()
    caller = os.sched_getscheduler(0)
    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot), max_actions=24)
        policies = {thread.name: os.sched_getscheduler(thread.native_id) for thread in threading.enumerate()
                    if thread.name.startswith("sequence-ai-") and thread.native_id is not None}
    assert out.reason == "completed"
    assert policies.get("sequence-ai-refill") == os.SCHED_BATCH, policies
    assert policies.get("sequence-ai-telemetry") == os.SCHED_BATCH, policies
    assert os.sched_getscheduler(0) == caller  # the driving thread keeps its own policy


def test_a_real_time_thread_is_never_lowered():
    seen = []

    def fifo_then_background():
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        except PermissionError:
            seen.append(None)
            return
        background_thread()
        seen.append(os.sched_getscheduler(0))

    thread = threading.Thread(target=fifo_then_background)
    thread.start()
    thread.join()
    if seen == [None]:
        pytest.skip("SCHED_FIFO is not allowed here")
    assert seen == [os.SCHED_FIFO]
