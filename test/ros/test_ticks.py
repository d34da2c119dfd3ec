"""The ROS timer as the loop's clock: one action per tick, no bursts after a stall."""

from __future__ import annotations

import threading
import time

import pytest

from sequence_ai_ros.ticks import TimerTicks


def never() -> bool:
    return False


def test_wait_blocks_until_the_next_tick():
    ticks = TimerTicks()
    ticks.reset()
    threading.Timer(0.1, ticks.tick).start()
    started = time.monotonic()
    ticks.wait(1 / 15, never)
    assert 0.08 <= time.monotonic() - started < 1.0


def test_the_first_action_of_a_run_waits_for_a_tick_even_if_one_just_passed():
    ticks = TimerTicks()
    ticks.reset()
    ticks.tick()
    threading.Timer(0.1, ticks.tick).start()
    started = time.monotonic()
    ticks.wait(1 / 15, never)
    assert time.monotonic() - started >= 0.08


def test_a_tick_during_the_action_is_due_at_once():
    ticks = TimerTicks()
    ticks.reset()
    threading.Timer(0.02, ticks.tick).start()
    ticks.wait(1 / 15, never)  # on the beat from here
    ticks.tick()  # the next tick arrives while the action is being published
    started = time.monotonic()
    ticks.wait(1 / 15, never)
    assert time.monotonic() - started < 0.05


def test_after_a_stall_the_next_action_waits_for_a_fresh_tick_instead_of_bursting():
    ticks = TimerTicks()
    ticks.reset()
    for _ in range(5):  # five ticks went by while the loop waited for a chunk
        ticks.tick()
    threading.Timer(0.1, ticks.tick).start()
    started = time.monotonic()
    ticks.wait(1 / 15, never)
    assert time.monotonic() - started >= 0.08


@pytest.mark.parametrize("call", ["wait", "on_beat"])
def test_waiting_for_a_tick_returns_promptly_when_interrupted(call):
    ticks = TimerTicks()
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
    ticks = TimerTicks()
    ticks.reset()
    threading.Timer(0.1, ticks.tick).start()
    started = time.monotonic()
    ticks.on_beat(never)
    assert time.monotonic() - started >= 0.08


def test_a_command_released_by_a_tick_goes_out_at_once():
    ticks = TimerTicks()
    ticks.reset()
    threading.Timer(0.02, ticks.tick).start()
    ticks.wait(1 / 15, never)
    started = time.monotonic()
    ticks.on_beat(never)
    assert time.monotonic() - started < 0.05


def test_after_a_stall_the_command_waits_for_a_tick_and_the_next_for_the_one_after():
    ticks = TimerTicks()
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
