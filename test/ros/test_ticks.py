"""The ROS timer as the loop's clock: one action per tick, no bursts after a stall."""

from __future__ import annotations

import threading
import time

import pytest
from eventually import wait_until

from sequence_ai_ros.ticks import TimerTicks

PERIOD = 1 / 15


def never() -> bool:
    return False


def test_wait_blocks_until_the_next_tick():
    ticks = TimerTicks(PERIOD)
    ticks.reset()
    threading.Timer(0.1, ticks.tick).start()
    started = time.monotonic()
    ticks.wait(1 / 15, never)
    assert 0.08 <= time.monotonic() - started < 1.0


def test_the_first_action_of_a_run_waits_for_a_tick_even_if_one_just_passed():
    ticks = TimerTicks(PERIOD)
    ticks.reset()
    ticks.tick()
    threading.Timer(0.1, ticks.tick).start()
    started = time.monotonic()
    ticks.wait(1 / 15, never)
    assert time.monotonic() - started >= 0.08


def test_a_tick_during_the_action_is_due_at_once():
    ticks = TimerTicks(PERIOD)
    ticks.reset()
    threading.Timer(0.02, ticks.tick).start()
    ticks.wait(1 / 15, never)  # on the beat from here
    ticks.tick()  # the next tick arrives while the action is being published
    started = time.monotonic()
    ticks.wait(1 / 15, never)
    assert time.monotonic() - started < 0.05


def test_after_a_stall_the_next_action_waits_for_a_fresh_tick_instead_of_bursting():
    ticks = TimerTicks(PERIOD)
    ticks.reset()
    for _ in range(5):  # five ticks went by while the loop waited for a chunk
        ticks.tick()
    threading.Timer(0.1, ticks.tick).start()
    started = time.monotonic()
    ticks.wait(1 / 15, never)
    assert time.monotonic() - started >= 0.08


@pytest.mark.parametrize("call", ["wait", "on_beat"])
def test_waiting_for_a_tick_returns_promptly_when_interrupted(call):
    ticks = TimerTicks(PERIOD)
    ticks.reset()
    flag = threading.Event()
    threading.Timer(0.05, flag.set).start()
    started = time.monotonic()
    if call == "wait":
        ticks.wait(1 / 15, flag.is_set)
    else:
        ticks.on_beat(flag.is_set)
    assert time.monotonic() - started < 0.2


def test_the_first_command_of_a_run_goes_out_on_the_next_tick():
    ticks = TimerTicks(PERIOD)
    ticks.reset()
    threading.Timer(0.1, ticks.tick).start()
    started = time.monotonic()
    ticks.on_beat(never)
    assert time.monotonic() - started >= 0.08


def test_a_command_released_by_a_tick_goes_out_at_once():
    ticks = TimerTicks(PERIOD)
    ticks.reset()
    threading.Timer(0.02, ticks.tick).start()
    ticks.wait(1 / 15, never)
    started = time.monotonic()
    ticks.on_beat(never)
    assert time.monotonic() - started < 0.05


@pytest.mark.parametrize("next_call_in_s, waits", [(0.05, False), (0.009, True)], ids=["on-time", "late"])
def test_a_command_released_by_a_late_tick_waits_for_the_next_one(next_call_in_s, waits):
    # The timer's callback ran late (a busy executor): rcl put its next call on the next period
    # boundary, 9 ms away. The command released by the late tick would go out that close to the
    # next tick's; it goes out on the next tick instead. The timer's clock is a hand-held one.
    ticks = TimerTicks(PERIOD, now=lambda: 100.0)
    ticks.reset()
    threading.Timer(0.02, ticks.tick).start()
    ticks.wait(PERIOD, never)
    ticks.on_beat(never)  # on the beat from here
    ticks.tick(next_call_in_s)  # the next tick arrives while the action is being published
    ticks.wait(PERIOD, never)  # due at once
    threading.Timer(0.1, ticks.tick).start()
    started = time.monotonic()
    ticks.on_beat(never)
    took = time.monotonic() - started
    assert took >= 0.08 if waits else took < 0.05, took


def test_a_period_that_is_not_a_positive_number_is_refused():
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="period_s"):
            TimerTicks(bad)


@pytest.mark.parametrize("held_up_s, waits", [(0.02, False), (0.07, True)], ids=["briefly", "past-half"])
def test_a_command_held_up_past_half_a_tick_interval_waits_for_the_next_tick(held_up_s, waits):
    # Released by a tick, then the thread does not run for a while (a starved CPU, a long-held
    # GIL). Going out after more than half the interval would put the command less than half a
    # period before the next tick's.
    ticks = TimerTicks(0.1)
    ticks.reset()
    ticks.tick()
    threading.Timer(0.1, ticks.tick).start()  # on schedule: the next call is 0.1 s after it
    ticks.wait(0.1, never)  # released by that tick
    time.sleep(held_up_s)
    threading.Timer(0.1, ticks.tick).start()
    started = time.monotonic()
    ticks.on_beat(never)
    took = time.monotonic() - started
    assert took >= 0.06 if waits else took < 0.05, took


def test_after_a_stall_the_command_waits_for_a_tick_and_the_next_for_the_one_after():
    ticks = TimerTicks(PERIOD)
    ticks.reset()
    threading.Timer(0.02, ticks.tick).start()
    ticks.wait(1 / 15, never)  # released by a tick, but the buffer was empty: the loop stalled
    for _ in range(3):
        ticks.tick()
    ticks.reset()  # the loop restarts the schedule after an underrun
    stamps = []
    ticker = threading.Thread(target=lambda: [time.sleep(0.1) or ticks.tick() for _ in range(2)])
    ticker.start()
    started = time.monotonic()
    ticks.on_beat(never)
    stamps.append(time.monotonic() - started)
    ticks.wait(1 / 15, never)
    stamps.append(time.monotonic() - started)
    ticker.join()
    assert stamps[0] >= 0.08 and stamps[1] - stamps[0] >= 0.08, stamps


def test_a_tick_that_releases_the_loop_stands_aside_until_its_command_went_out():
    ticks = TimerTicks(PERIOD, handoff_s=5.0)
    ticks.reset()
    released = threading.Event()

    def loop() -> None:
        ticks.wait(1 / 15, never)
        released.set()

    waiter = threading.Thread(target=loop)
    waiter.start()
    assert wait_until(lambda: ticks._waiting)
    timer = threading.Thread(target=ticks.tick)  # the timer's callback
    timer.start()
    assert released.wait(2.0)
    time.sleep(0.2)
    assert timer.is_alive(), "the timer's thread went on before the command went out"
    ticks.sent()
    timer.join(2.0)
    assert not timer.is_alive()
    waiter.join(2.0)


def test_a_tick_with_no_loop_waiting_never_stands_aside():
    ticks = TimerTicks(PERIOD, handoff_s=5.0)
    started = time.monotonic()
    for _ in range(3):
        ticks.tick()
    assert time.monotonic() - started < 1.0


def test_standing_aside_is_bounded_when_no_command_follows_the_tick():
    ticks = TimerTicks(PERIOD, handoff_s=0.3)
    ticks.reset()
    waiter = threading.Thread(target=ticks.wait, args=(1 / 15, never))
    waiter.start()
    assert wait_until(lambda: ticks._waiting)
    started = time.monotonic()
    ticks.tick()  # the loop wakes but publishes nothing (a stall, an ending)
    assert 0.25 <= time.monotonic() - started < 2.0
    waiter.join(2.0)



def test_a_tick_wait_is_woken_by_the_policy_interrupt_flag_not_by_polling_it():
    from sequence_ai._waiting import InterruptFlag

    class CountingFlag(InterruptFlag):
        def __init__(self):
            super().__init__()
            self.looks = 0

        def is_set(self):
            self.looks += 1
            return super().is_set()

    ticks, flag = TimerTicks(PERIOD), CountingFlag()
    ticks.reset()
    waiter = threading.Thread(target=ticks.wait, args=(1 / 15, flag.is_set))
    waiter.start()
    assert wait_until(lambda: ticks._waiting)
    threading.Timer(0.5, flag.set).start()  # no tick comes: only the flag can end the wait
    waiter.join(5.0)
    assert not waiter.is_alive()
    assert flag.looks <= 4, f"looked {flag.looks} times in half a second: a poll"
