"""The ROS timer as the loop's clock: one action per tick, no bursts after a stall.

Which tick let a wait or a command go is told by counting the ticks the test gave it, each given
only once the call blocks waiting for it (`released_by`), never by how long the call took: on a
loaded machine the test's threads run late, the ticks' order does not change."""

from __future__ import annotations

import sys
import threading
import time

import pytest
from eventually import wait_until

from sequence_ai_ros.control.ticks import TimerTicks

PERIOD = 1 / 15


def never() -> bool:
    return False


class WatchedTicks(TimerTicks):
    """TimerTicks that tells how many ticks it was given and which tick a blocked wait() or
    on_beat() awaits: so a test tells which tick let a call go by counting, not by timing."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.given = 0
        self.awaiting = None  # the number of the tick a blocked call waits for
        self.looks = 0

    def tick(self) -> None:
        self.given += 1
        super().tick()

    def _too_soon(self) -> bool:
        self.looks += 1  # each look at the timer's clock for the spacing
        return super()._too_soon()

    def _await_tick_after(self, count, interrupted) -> None:
        self.awaiting = count + 1
        try:
            super()._await_tick_after(count, interrupted)
        finally:
            self.awaiting = None


def released_by(ticks: WatchedTicks, call, clock=None, advances=(0.0, 0.0, 0.0), timeout_s: float = 10.0) -> int:
    """Which tick let `call` (run on a thread of its own) return: 0 if it returned without one, k
    if the k-th tick given here did. A tick is given (from a thread, as the timer's callback: it
    may stand aside for a command) only once the call blocks waiting for it; the hand clock (if
    any) moves on by advances[k-1] first."""
    done = threading.Event()
    thread = threading.Thread(target=lambda: (call(), done.set()), daemon=True)
    first = ticks.given
    timers = []
    thread.start()
    try:
        for given in range(len(advances) + 1):
            assert wait_until(lambda: done.is_set() or ticks.awaiting == ticks.given + 1, timeout_s), \
                "neither returned nor waited for a tick"
            if done.is_set():
                return ticks.given - first
            assert given < len(advances), f"still waiting after {given} ticks"
            if clock is not None:
                clock.t += advances[given]
            timers.append(threading.Thread(target=ticks.tick, daemon=True))
            timers[-1].start()
            assert wait_until(lambda want=first + given + 1: ticks.given == want, timeout_s)
        raise AssertionError("unreachable")
    finally:
        for timer in timers:
            timer.join(timeout_s)


def waits(ticks: TimerTicks):
    return lambda: ticks.wait(PERIOD, gives_up_after(10.0))


def beats(ticks: TimerTicks):
    """The node's way to send one command: inside beat() (on_beat, then sent)."""
    def send() -> None:
        with ticks.beat(gives_up_after(10.0)):
            pass
    return send


def test_wait_blocks_until_the_next_tick():
    ticks = WatchedTicks(PERIOD)
    ticks.reset()
    assert released_by(ticks, waits(ticks)) == 1


def test_the_first_action_of_a_run_waits_for_a_tick_even_if_one_just_passed():
    ticks = WatchedTicks(PERIOD)
    ticks.reset()
    ticks.tick()
    assert released_by(ticks, waits(ticks)) == 1


def test_a_tick_during_the_action_is_due_at_once():
    ticks = WatchedTicks(PERIOD)
    ticks.reset()
    assert released_by(ticks, waits(ticks)) == 1  # on the beat from here
    ticks.tick()  # the next tick arrives while the action is being published
    assert released_by(ticks, waits(ticks)) == 0


@pytest.mark.parametrize("start", ["of a run", "on the beat"])
def test_after_a_stall_the_next_action_waits_for_a_fresh_tick_instead_of_bursting(start):
    ticks = WatchedTicks(PERIOD)
    ticks.reset()
    if start == "on the beat":
        assert released_by(ticks, waits(ticks)) == 1
    for _ in range(5):  # five ticks went by while the loop waited for a chunk
        ticks.tick()
    assert released_by(ticks, waits(ticks)) == 1


@pytest.mark.parametrize("call", ["wait", "on_beat"])
def test_waiting_for_a_tick_returns_when_interrupted(call):
    # A plain callable is looked at every _POLL_S (20 ms); the bound here only has to tell a
    # return from a wait for a tick that never comes, on a loaded machine.
    ticks = WatchedTicks(PERIOD)
    ticks.reset()
    flag = threading.Event()
    waiter = threading.Thread(target=ticks.wait if call == "wait" else ticks.on_beat,
                              args=(PERIOD, flag.is_set) if call == "wait" else (flag.is_set,), daemon=True)
    waiter.start()
    assert wait_until(lambda: ticks.awaiting == 1, 10.0)
    flag.set()
    waiter.join(5.0)
    assert not waiter.is_alive() and ticks.given == 0


def test_the_first_command_of_a_run_goes_out_on_the_next_tick():
    ticks = WatchedTicks(PERIOD)
    ticks.reset()
    assert released_by(ticks, beats(ticks)) == 1


def test_a_command_released_by_a_tick_goes_out_at_once():
    ticks = WatchedTicks(PERIOD)
    ticks.reset()
    assert released_by(ticks, waits(ticks)) == 1
    assert released_by(ticks, beats(ticks)) == 0


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


def on_the_beat(ticks: WatchedTicks) -> None:
    """A first tick releases the loop and its command goes out: on the beat from here."""
    ticks.reset()
    assert released_by(ticks, waits(ticks)) == 1
    assert released_by(ticks, beats(ticks)) == 0


def spaced_on_the_clock(ticks: WatchedTicks, clock: HandClock, call, until_t: float) -> None:
    """`call` (on a thread of its own) waits for the spacing on the timer's clock: it still waits
    after looking at the clock at 1 ms before `until_t`, and returns once the clock is there,
    with no tick given."""
    done = threading.Event()
    given, looks = ticks.given, ticks.looks
    clock.t = until_t - 0.001
    thread = threading.Thread(target=lambda: (call(), done.set()), daemon=True)
    thread.start()
    assert wait_until(lambda: done.is_set() or ticks.looks >= looks + 2, 10.0), "never looked at the clock"
    assert not done.is_set(), "went out less than half a period after the command before"
    clock.t = until_t
    assert done.wait(10.0), "still waiting half a period after the command before"
    thread.join(10.0)
    assert ticks.given == given, "waited for a tick, not for the spacing"


def test_a_command_a_period_after_the_one_before_goes_out_on_its_tick():
    clock = HandClock()
    ticks = WatchedTicks(PERIOD, now=clock)
    on_the_beat(ticks)
    clock.t += 0.04
    ticks.tick()  # releases the loop
    assert released_by(ticks, waits(ticks)) == 0  # due at once
    assert released_by(ticks, beats(ticks), clock, (PERIOD, PERIOD)) == 0


def test_a_command_less_than_half_a_period_after_the_one_before_waits_until_half_a_period():
    # The previous tick's callback ran late (a busy executor) and rcl put the next call on the
    # next period boundary, 9 ms later; or the previous command's thread was held up after its
    # tick. The command this tick releases would go out that close to the one before; it goes out
    # half a period after that one instead, not a whole period later on the next tick (which
    # would play every row after it a period late), and the next command is on its tick again.
    clock = HandClock()
    ticks = WatchedTicks(PERIOD, now=clock)
    on_the_beat(ticks)
    before = clock.t
    clock.t += 0.009
    ticks.tick()  # releases the loop
    assert released_by(ticks, waits(ticks)) == 0  # due at once
    spaced_on_the_clock(ticks, clock, beats(ticks), before + PERIOD / 2 + 1e-6)
    clock.t = before + 0.009 + PERIOD  # the tick after
    assert released_by(ticks, waits(ticks)) == 1
    assert released_by(ticks, beats(ticks)) == 0


def test_the_first_command_after_a_stall_also_keeps_half_a_period_from_the_one_before():
    # A stall's first command waits for a tick anyway; when that tick comes moments after the
    # command before (a late callback, then the boundary), it then waits for the spacing too.
    clock = HandClock()
    ticks = WatchedTicks(PERIOD, now=clock)
    on_the_beat(ticks)
    before, given = clock.t, ticks.given
    ticks.reset()  # the buffer ran dry: the loop restarts the schedule
    outcome = []
    waiter = threading.Thread(target=lambda: outcome.append(ticks.on_beat(gives_up_after(10.0))), daemon=True)
    waiter.start()
    assert wait_until(lambda: ticks.awaiting == ticks.given + 1, 10.0)
    clock.t = before + 0.015  # its tick, 15 ms after the command before
    looks = ticks.looks
    ticks.tick()
    assert wait_until(lambda: ticks.looks >= looks + 3, 10.0)  # the tick's look, then two of the waiter's
    assert not outcome, "went out 15 ms after the command before"
    clock.t = before + PERIOD / 2 + 1e-6
    waiter.join(10.0)
    assert outcome == [None] and ticks.given == given + 1


def test_the_spacing_counts_from_a_command_that_went_out_not_one_that_did_not():
    clock = HandClock()
    ticks = WatchedTicks(PERIOD, now=clock)
    on_the_beat(ticks)
    clock.t += 1.0
    ticks.tick()
    ticks.wait(PERIOD, never)
    ticks.on_beat(never)
    ticks.sent(published=False)  # refused (the run was stopping): nothing went out
    ticks.reset()  # the next run
    clock.t += 0.01
    assert released_by(ticks, beats(ticks), clock, (0.01, PERIOD)) == 1, "held back by a command never sent"


def test_a_timer_late_by_the_same_amount_every_call_loses_no_command():
    # Every callback equally late (say 45 ms, more than half the period): still a period apart,
    # so every command goes out on its tick.
    clock = HandClock()
    ticks = WatchedTicks(PERIOD, now=clock)
    on_the_beat(ticks)
    for _ in range(5):
        clock.t += PERIOD
        ticks.tick()
        ticks.wait(PERIOD, never)
        assert released_by(ticks, beats(ticks)) == 0


def test_a_clock_that_went_back_does_not_hold_commands():
    clock = HandClock()
    ticks = WatchedTicks(PERIOD, now=clock)
    on_the_beat(ticks)
    clock.t -= 30.0  # a simulator reset
    ticks.tick()
    ticks.wait(PERIOD, never)
    assert released_by(ticks, beats(ticks)) == 0


def test_a_command_held_back_is_waiting_and_its_tick_does_not_stand_aside():
    # The node skips a stall's zero velocity at a tick a command is waiting for (it follows at
    # once), and a tick that will not let the command out does not wait for it to go out.
    clock = HandClock()
    ticks = WatchedTicks(PERIOD, now=clock, handoff_s=5.0)
    on_the_beat(ticks)
    ticks.reset()
    assert not ticks.command_waiting
    waiter = threading.Thread(target=beats(ticks))
    waiter.start()
    assert wait_until(lambda: ticks.command_waiting)
    clock.t += 0.005
    started = time.monotonic()
    ticks.tick()  # 5 ms after the command before: this one stays back
    assert time.monotonic() - started < 2.0, "stood aside for a command the spacing holds back"
    assert ticks.command_waiting
    clock.t += PERIOD  # half a period after the command before: it goes out, off the beat
    waiter.join(5.0)
    assert not waiter.is_alive() and not ticks.command_waiting


def test_a_period_that_is_not_a_positive_number_is_refused():
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="period_s"):
            TimerTicks(bad)


def test_after_a_stall_the_command_waits_for_a_tick_and_the_next_for_the_one_after():
    ticks = WatchedTicks(PERIOD)
    ticks.reset()
    assert released_by(ticks, waits(ticks)) == 1  # released by a tick, but the buffer was empty: the loop stalled
    for _ in range(3):
        ticks.tick()
    ticks.reset()  # the loop restarts the schedule after an underrun
    assert released_by(ticks, beats(ticks)) == 1
    assert released_by(ticks, waits(ticks)) == 1


def standing_aside(thread: threading.Thread) -> bool:
    """`thread` is blocked in TimerTicks.tick's wait for the command to go out (by its frames)."""
    frame, codes = sys._current_frames().get(thread.ident), set()
    while frame is not None:
        codes.add(frame.f_code)
        frame = frame.f_back
    return TimerTicks.tick.__code__ in codes and threading.Event.wait.__code__ in codes


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
    assert wait_until(lambda: standing_aside(timer), 5.0), "the timer's thread went on before the command went out"
    assert timer.is_alive()
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


def run_started():
    """A run's ticks on a hand clock, its first command gone out on a tick."""
    clock = HandClock()
    ticks = WatchedTicks(PERIOD, now=clock)
    ticks.start_run()
    assert released_by(ticks, waits(ticks)) == 1
    assert released_by(ticks, beats(ticks)) == 0
    return clock, ticks


def test_a_command_periods_late_is_one_late_beat_counted_with_how_late_and_nothing_bursts():
    # The node's threads did not run for four periods (the host or the kernel gave the cores to
    # others): four ticks went by, the loop takes a fresh one rather than play the skipped rows at
    # once, and that command is one late beat, four periods late. The next, on its tick, is on time.
    clock, ticks = run_started()
    for _ in range(4):
        clock.t += PERIOD
        ticks.tick()
    assert released_by(ticks, waits(ticks), clock, (PERIOD,)) == 1, "played a skipped row at once"
    assert released_by(ticks, beats(ticks)) == 0
    assert ticks.late_beats == 1 and ticks.late_beat_s == pytest.approx(4 * PERIOD)
    assert released_by(ticks, waits(ticks), clock, (PERIOD,)) == 1
    assert released_by(ticks, beats(ticks)) == 0
    assert ticks.late_beats == 1 and ticks.late_beat_s == pytest.approx(4 * PERIOD)


def test_a_timer_late_within_half_a_period_makes_no_late_beat():
    clock, ticks = run_started()
    for interval in (1.45 * PERIOD, 0.6 * PERIOD, PERIOD):  # a late tick, the one after it, one on time
        clock.t += interval
        ticks.tick()
        assert released_by(ticks, waits(ticks)) == 0
        assert released_by(ticks, beats(ticks)) == 0
    assert (ticks.late_beats, ticks.late_beat_s) == (0, 0.0)


def test_the_wait_for_a_late_chunk_is_an_underrun_not_a_late_beat():
    # The client restarts the schedule (reset) after an underrun: the time since the command
    # before is the chunk's lateness, which the client counts (underrun_s), not the node's.
    clock, ticks = run_started()
    for _ in range(5):
        clock.t += PERIOD
        ticks.tick()
    ticks.reset()
    assert released_by(ticks, beats(ticks), clock, (PERIOD,)) == 1
    assert (ticks.late_beats, ticks.late_beat_s) == (0, 0.0)
    clock.t += 3 * PERIOD  # ...but a late command after it is the node's again
    ticks.tick()
    assert released_by(ticks, waits(ticks)) == 0
    assert released_by(ticks, beats(ticks)) == 0
    assert ticks.late_beats == 1 and ticks.late_beat_s == pytest.approx(2 * PERIOD)


def test_each_run_counts_its_own_late_beats_from_its_first_command():
    clock, ticks = run_started()
    clock.t += 3 * PERIOD
    ticks.tick()
    assert released_by(ticks, waits(ticks)) == 0
    assert released_by(ticks, beats(ticks)) == 0
    assert ticks.late_beats == 1
    clock.t += 10.0  # the next goal, ten seconds later
    ticks.start_run()
    assert (ticks.late_beats, ticks.late_beat_s) == (0, 0.0)
    assert released_by(ticks, beats(ticks), clock, (PERIOD,)) == 1
    assert (ticks.late_beats, ticks.late_beat_s) == (0, 0.0), "the time between two goals is no late beat"
