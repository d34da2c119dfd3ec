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


class HandClock:
    """The timer's clock, moved by the test."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def gives_up_after(seconds: float):
    """An `interrupted` that goes up after `seconds`: a wait that should have ended fails, not hangs."""
    end = time.monotonic() + seconds
    return lambda: time.monotonic() > end


def publish(ticks: TimerTicks, within_s: float = 2.0) -> float:
    """The node's way to send one command (on_beat, then sent): how long on_beat took."""
    started = time.monotonic()
    ticks.on_beat(gives_up_after(within_s))
    took = time.monotonic() - started
    ticks.sent()
    return took


def on_the_beat(ticks: TimerTicks) -> None:
    """A first tick releases the loop and its command goes out: on the beat from here."""
    ticks.reset()
    threading.Timer(0.02, ticks.tick).start()
    ticks.wait(PERIOD, never)
    publish(ticks)


def publish_with_ticks(ticks: TimerTicks, clock: HandClock, advances: tuple, every_s: float = 0.1) -> float:
    """How long on_beat takes with a tick every `every_s`, the timer's clock moved on by each of
    `advances` at its tick."""
    def ticker() -> None:
        for step in advances:
            time.sleep(every_s)  # the timer's period: the scenario, not a wait for an event
            clock.t += step
            ticks.tick()

    thread = threading.Thread(target=ticker)
    thread.start()
    took = publish(ticks, within_s=every_s * len(advances) + 1.0)
    thread.join()
    return took


@pytest.mark.parametrize("after_s, waits", [(0.04, False), (0.009, True)], ids=["a-period-on", "9ms-on"])
def test_a_command_less_than_half_a_period_after_the_one_before_waits_for_the_next_tick(after_s, waits):
    # The previous tick's callback ran late (a busy executor) and rcl put the next call on the
    # next period boundary, 9 ms later; or the previous command's thread was held up after its
    # tick. The command this tick releases would go out that close to the one before; it goes out
    # on the next tick instead.
    clock = HandClock()
    ticks = TimerTicks(PERIOD, now=clock)
    on_the_beat(ticks)
    clock.t += after_s
    ticks.tick()  # releases the loop
    ticks.wait(PERIOD, never)  # due at once
    took = publish_with_ticks(ticks, clock, (PERIOD, PERIOD))
    assert 0.08 <= took < 0.18 if waits else took < 0.05, took


def test_the_first_command_after_a_stall_also_keeps_half_a_period_from_the_one_before():
    # A stall's first command waits for a tick anyway; when that tick comes moments after the
    # command before (a late callback, then the boundary), it waits for the one after.
    clock = HandClock()
    ticks = TimerTicks(PERIOD, now=clock)
    on_the_beat(ticks)
    ticks.reset()  # the buffer ran dry: the loop restarts the schedule
    clock.t += 0.01
    took = publish_with_ticks(ticks, clock, (0.005, PERIOD, PERIOD))  # its tick 15 ms after the command before
    assert 0.18 <= took < 0.28, f"{took:.3f} s: went out on the first tick, or not on the second"


def test_the_spacing_counts_from_a_command_that_went_out_not_one_that_did_not():
    clock = HandClock()
    ticks = TimerTicks(PERIOD, now=clock)
    on_the_beat(ticks)
    clock.t += 1.0
    ticks.tick()
    ticks.wait(PERIOD, never)
    ticks.on_beat(never)
    ticks.sent(published=False)  # refused (the run was stopping): nothing went out
    ticks.reset()  # the next run
    clock.t += 0.01
    assert publish_with_ticks(ticks, clock, (0.01, PERIOD)) < 0.18, "held back by a command never sent"


def test_a_timer_late_by_the_same_amount_every_call_loses_no_command():
    # Every callback equally late (say 45 ms, more than half the period): still a period apart,
    # so every command goes out on its tick.
    clock = HandClock()
    ticks = TimerTicks(PERIOD, now=clock)
    on_the_beat(ticks)
    for _ in range(5):
        clock.t += PERIOD
        ticks.tick()
        ticks.wait(PERIOD, never)
        assert publish(ticks, within_s=1.0) < 0.05


def test_a_clock_that_went_back_does_not_hold_commands():
    clock = HandClock()
    ticks = TimerTicks(PERIOD, now=clock)
    on_the_beat(ticks)
    clock.t -= 30.0  # a simulator reset
    ticks.tick()
    ticks.wait(PERIOD, never)
    assert publish(ticks, within_s=1.0) < 0.05


def test_a_command_held_back_is_waiting_and_its_tick_does_not_stand_aside():
    # The node skips a stall's zero velocity at a tick a command is waiting for (it follows at
    # once), and a tick that will not let the command out does not wait for it to go out.
    clock = HandClock()
    ticks = TimerTicks(PERIOD, now=clock, handoff_s=5.0)
    on_the_beat(ticks)
    ticks.reset()
    assert not ticks.command_waiting
    waiter = threading.Thread(target=publish, args=(ticks, 10.0))
    waiter.start()
    assert wait_until(lambda: ticks.command_waiting)
    clock.t += 0.005
    started = time.monotonic()
    ticks.tick()  # 5 ms after the command before: this one stays back
    assert time.monotonic() - started < 2.0, "stood aside for a command the spacing holds back"
    assert ticks.command_waiting
    clock.t += PERIOD
    ticker = threading.Thread(target=ticks.tick)  # stands aside until the command is sent
    ticker.start()
    waiter.join(5.0)
    ticker.join(5.0)
    assert not waiter.is_alive() and not ticker.is_alive() and not ticks.command_waiting


def test_a_period_that_is_not_a_positive_number_is_refused():
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="period_s"):
            TimerTicks(bad)


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
