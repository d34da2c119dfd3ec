"""The one way the driving thread waits (`_waiting.py`): woken by the event, never by a poll."""

from __future__ import annotations

import threading
import time

import pytest

from sequence_ai._waiting import Interrupted, InterruptFlag, Waiter


class Counted:
    """A readiness check that counts how often the waiter looks."""

    def __init__(self):
        self.looks = 0
        self.value = False

    def __call__(self):
        self.looks += 1
        return self.value


def test_a_waiter_looks_again_only_when_notified():
    waiter, ready = Waiter(InterruptFlag()), Counted()
    timer = threading.Timer(0.5, lambda: (setattr(ready, "value", True), waiter.notify()))
    timer.start()
    assert waiter.until(ready, time.monotonic() + 10.0)
    # a poll every 20 ms would have looked ~25 times in half a second
    assert ready.looks <= 3, ready.looks


def test_an_interrupt_wakes_a_wait_that_has_no_deadline():
    flag = InterruptFlag()
    waiter, ready = Waiter(flag), Counted()
    threading.Timer(0.3, flag.set).start()
    with pytest.raises(Interrupted):
        waiter.until(ready)
    assert ready.looks <= 2


def test_a_deadline_ends_the_wait_with_false():
    waiter = Waiter(InterruptFlag())
    started = time.monotonic()
    assert waiter.until(lambda: False, started + 0.2) is False
    assert time.monotonic() - started >= 0.2


def test_sleep_is_cut_short_by_an_interrupt_that_comes_first():
    flag = InterruptFlag()
    waiter = Waiter(flag)
    threading.Timer(0.2, flag.set).start()
    started = time.monotonic()
    with pytest.raises(Interrupted):
        waiter.sleep(30.0)
    assert time.monotonic() - started < 10.0


def test_wait_on_a_flag_blocks_on_it_and_wakes_when_it_is_set():
    from sequence_ai._waiting import wait_on

    class CountingFlag(InterruptFlag):
        looks = 0

        def is_set(self):
            CountingFlag.looks += 1
            return super().is_set()

    flag = CountingFlag()
    threading.Timer(0.3, flag.set).start()
    started = time.monotonic()
    assert wait_on(flag.is_set, 30.0) is True
    assert time.monotonic() - started < 10.0 and CountingFlag.looks == 0  # one blocking wait, no looks


def test_wait_on_a_plain_callable_looks_until_it_holds_or_time_runs_out():
    from sequence_ai._waiting import wait_on

    state = {"up": False}
    assert wait_on(lambda: state["up"], 0.1) is False
    threading.Timer(0.1, lambda: state.update(up=True)).start()
    assert wait_on(lambda: state["up"], 10.0) is True
