"""MonotonicPacer: absolute schedule, re-anchoring when late, prompt on interrupt, no busy-wait."""

from __future__ import annotations

import sys
import threading
import time

from eventually import wait_until

from sequence_ai._loop._pacing import POLL_S, InterruptFlag, MonotonicPacer, Pacer


class FakeClock:
    def __init__(self):
        self.now = 100.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.now += seconds


def test_monotonic_pacer_satisfies_the_pacer_protocol():
    pacer: Pacer = MonotonicPacer()
    assert callable(pacer.wait)


def test_pacer_keeps_an_absolute_schedule_despite_act_time():
    clock = FakeClock()
    pacer = MonotonicPacer(clock, clock.sleep)
    pacer.wait(0.1, lambda: False)
    assert abs(clock.now - 100.1) < 1e-9
    clock.now += 0.03  # act() took 30 ms: the next wait absorbs it
    pacer.wait(0.1, lambda: False)
    assert abs(clock.now - 100.2) < 1e-9


def test_pacer_reanchors_instead_of_bursting_when_more_than_one_period_late():
    clock = FakeClock()
    pacer = MonotonicPacer(clock, clock.sleep)
    pacer.wait(0.1, lambda: False)
    clock.now += 0.5  # a stall of five periods
    pacer.wait(0.1, lambda: False)
    assert abs(clock.now - 100.7) < 1e-9  # one full period after the late action, not zero
    assert pacer.reanchors == 1


def test_after_a_late_wake_up_the_next_wait_lasts_half_a_period_then_the_schedule_holds():
    # A 10 ms period (one sleep per wait, under POLL_S). The wait for action 2 wakes 8 ms late (a
    # busy machine). Action 3 is due 2 ms later by the schedule: it waits until half a period after
    # action 2 instead of going out at once, and action 4 is on the schedule again.
    assert POLL_S > 0.01
    clock = FakeClock()
    overshoot = iter([0.0, 0.008, 0.0, 0.0])
    late_by = 0.0

    def sleep(seconds):
        nonlocal late_by
        clock.sleep(seconds)
        clock.now += late_by
        late_by = 0.0

    pacer = MonotonicPacer(clock, sleep)
    released = []
    for late in overshoot:
        late_by = late
        pacer.wait(0.01, lambda: False)
        released.append(round(clock.now - 100.0, 9))
    assert released == [0.01, 0.028, 0.033, 0.04]
    assert pacer.reanchors == 0


def test_pacer_sleeps_in_slices_no_longer_than_the_poll_interval():
    clock = FakeClock()
    pacer = MonotonicPacer(clock, clock.sleep)
    pacer.wait(0.2, lambda: False)
    assert clock.sleeps and max(clock.sleeps) <= POLL_S + 1e-12


def test_pacer_returns_within_a_poll_interval_of_an_interrupt():
    # On the pacer's own (injected) clock: the interrupt goes up 50 ms into a 5 s wait, a plain
    # callable (the sleeping-in-slices path); the wait ends within one slice of it.
    clock = FakeClock()
    pacer = MonotonicPacer(clock, clock.sleep)
    pacer.wait(5.0, lambda: clock.now >= 100.05)
    assert 100.05 <= clock.now <= 100.05 + POLL_S + 1e-9, clock.now


def test_pacer_reset_drops_the_previous_schedule():
    clock = FakeClock()
    pacer = MonotonicPacer(clock, clock.sleep)
    pacer.wait(0.1, lambda: False)
    pacer.reset()
    clock.now += 0.05
    pacer.wait(0.1, lambda: False)
    assert abs(clock.now - 100.25) < 1e-9


def test_pacer_waits_on_an_interrupt_event_and_wakes_at_once():
    # A 60 s period: a wait that returns within seconds of the event woke on it, however late
    # this loaded machine runs the threads.
    event = threading.Event()
    pacer = MonotonicPacer()
    threading.Timer(0.05, event.set).start()
    started = time.monotonic()
    pacer.wait(60.0, event.is_set)
    assert event.is_set() and time.monotonic() - started < 10.0


def test_pacer_waiting_on_an_event_waits_each_period_when_it_stays_down():
    # (The schedule itself is pinned on an injected clock above; a real one only bounds it below
    # here: a loaded machine makes waits longer, never shorter.)
    event = threading.Event()
    pacer = MonotonicPacer()
    started = time.monotonic()
    for _ in range(5):
        pacer.wait(0.02, event.is_set)
    assert time.monotonic() - started >= 0.09


def test_interrupt_flag_sets_clears_and_waits_like_an_event():
    flag = InterruptFlag()
    assert not flag.is_set() and flag.wait(0) is False
    started = time.monotonic()
    assert flag.wait(0.05) is False
    assert time.monotonic() - started >= 0.04
    flag.set()
    flag.set()  # idempotent
    assert flag.is_set() and flag.wait(0) is True and flag.wait(5.0) is True
    flag.clear()
    flag.clear()
    assert not flag.is_set() and flag.wait(0.01) is False


def test_interrupt_flag_wakes_every_waiter_at_once():
    flag = InterruptFlag()
    woke = []
    waiters = [threading.Thread(target=lambda: woke.append(flag.wait(5.0))) for _ in range(3)]
    for waiter in waiters:
        waiter.start()
    # every waiter inside wait() (its innermost Python frame: the lock it blocks on is C)
    assert wait_until(lambda: all(getattr(sys._current_frames().get(w.ident), "f_code", None)
                                  is InterruptFlag.wait.__code__ for w in waiters), 5.0)
    started = time.monotonic()
    flag.set()
    for waiter in waiters:
        waiter.join(2.0)
    assert woke == [True, True, True]
    assert time.monotonic() - started < 4.0  # woken by the set, not by their 5 s timeout


class CountingFlag(InterruptFlag):
    def __init__(self) -> None:
        super().__init__()
        self.polls = 0

    def is_set(self) -> bool:
        self.polls += 1
        return super().is_set()


def test_pacer_blocks_on_the_policy_interrupt_flag_instead_of_polling_it():
    flag = CountingFlag()
    pacer = MonotonicPacer()
    pacer.wait(0.2, flag.is_set)  # a period of 10 poll intervals
    assert flag.polls == 0
    threading.Timer(0.05, flag.set).start()
    started = time.monotonic()
    pacer.wait(60.0, flag.is_set)
    assert flag.polls == 0 and time.monotonic() - started < 10.0  # woken by the flag, not the 60 s period
