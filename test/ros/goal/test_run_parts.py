"""The node's run bookkeeping on its own: how a run stops and holds (GoalRun), which goal holds the
slot (GoalSlot), where an instruction change goes (GoalServices), the sim-time bound (RunClock), and
how the client's outcome and progress become the node's."""

from __future__ import annotations

import math
import threading
import time
from types import SimpleNamespace

import pytest

from sequence_ai import RunOutcome
from sequence_ai_ros.goal.outcome import as_reported, feedback_message, outcome_message
from sequence_ai_ros.goal.slot import GoalRun, GoalSlot, RunStopped
from sequence_ai_ros.goal.time_bound import SIM_TIME_WALL_MARGIN_S, RunClock

pytestmark = pytest.mark.ros


class Interrupts:
    def __init__(self):
        self.count = 0

    def __call__(self):
        self.count += 1


def test_the_first_stop_reason_wins_and_every_stop_interrupts():
    interrupts = Interrupts()
    run = GoalRun("handle", interrupts)
    run.check()  # running: nothing raised
    assert run.stop("estop") and not run.stop("interrupted")
    assert run.stop_reason == "estop" and interrupts.count == 2
    with pytest.raises(RunStopped):
        run.check()
    run.interrupt_again()
    assert interrupts.count == 3


def test_a_run_holds_once_whoever_asks_first():
    run = GoalRun(goal_handle=None, interrupt=Interrupts())
    holds = []
    assert run.hold_once(lambda: holds.append("client")) is True  # the client's hold on its ending
    assert run.hold_once(lambda: holds.append("node")) is False  # the node's, on every ending: not again
    assert holds == ["client"] and run.held.is_set()


def test_no_command_goes_out_once_a_run_is_stopping_and_stop_waits_for_one_going_out():
    run = GoalRun("handle", Interrupts())
    publishing, release, stopped = threading.Event(), threading.Event(), threading.Event()

    def publish():
        with run.publishing():
            publishing.set()
            release.wait(5.0)

    publisher = threading.Thread(target=publish)
    publisher.start()
    assert publishing.wait(5.0)
    stopper = threading.Thread(target=lambda: (run.stop("estop"), stopped.set()))
    stopper.start()
    assert not stopped.wait(0.2), "stop() returned while a command was going out"
    release.set()
    assert stopped.wait(5.0)
    publisher.join(5.0)
    stopper.join(5.0)
    with pytest.raises(RunStopped), run.publishing():
        pytest.fail("published after the stop")


def test_busy_policy_reject_holds_the_slot_from_acceptance_to_the_end():
    slot = GoalSlot(preempt=False, interrupt=Interrupts())
    assert slot.reserve() and not slot.reserve()
    run = slot.claim("first", lambda r: None, wait_s=1.0)
    assert slot.run is run and slot.driving is run and not slot.reserve()
    run.held.set()
    assert slot.driving is None, "a run that has held is not driving"
    slot.release(run)
    assert slot.run is None and slot.reserve()


def test_busy_policy_preempt_stops_the_running_goal_and_takes_the_slot_once_it_ended():
    slot = GoalSlot(preempt=True, interrupt=Interrupts())
    first = slot.claim("first", lambda r: None, wait_s=1.0)
    ended = threading.Timer(0.2, lambda: slot.release(first))
    ended.start()
    begun = []
    second = slot.claim("second", begun.append, wait_s=5.0)
    assert first.stop_reason == "interrupted" and slot.run is second and begun == [second]
    timed_out = slot.claim("third", begun.append, wait_s=0.1)  # second never ends
    assert timed_out is None and slot.run is second and second.stop_reason == "interrupted"


def test_a_goal_cancelled_before_its_run_begins_stops_as_it_begins():
    # Under a cancel flood with preempt, a goal cancelled while it waited for the preempted one to
    # stop used to be driven anyway (the cancel found another goal in the slot and did nothing).
    slot = GoalSlot(preempt=True, interrupt=Interrupts())
    first = slot.claim("first", lambda r: None, wait_s=1.0)
    slot.cancel("second")  # accepted, its run not begun: the slot holds the first
    assert first.stop_reason is None, "another goal's cancel stops nothing"
    threading.Timer(0.2, lambda: slot.release(first)).start()
    second = slot.claim("second", lambda r: None, wait_s=5.0)
    assert second.stop_reason == "canceled"
    with pytest.raises(RunStopped):
        second.check()
    slot.cancel("second")  # the running goal's own cancel stops it at once (it already is)
    slot.release(second)
    third = slot.claim("third", lambda r: None, wait_s=1.0)
    assert third.stop_reason is None, "a cancel is remembered for its own goal only, and only once"
    slot.cancel("third")
    assert third.stop_reason == "canceled"


class _Client:
    """The client's side of the instruction: the one in force, replaced by set_instruction()."""

    def __init__(self, instruction):
        self.instruction = instruction

    def set_instruction(self, text):
        self.instruction = text


def test_a_change_asked_before_the_runs_first_observation_reaches_the_client_at_that_observation():
    from sequence_ai_ros.goal.services import GoalServices

    client, announced = _Client("the last goal's"), []
    slot = GoalSlot(preempt=False, interrupt=Interrupts())
    goal = SimpleNamespace(request=SimpleNamespace(instruction="pick up the cup"))
    run = slot.claim(goal, lambda r: None, wait_s=1.0)
    services = GoalServices(slot, client, announced.append, lambda _: None)
    reply = services.set_instruction(SimpleNamespace(instruction="open the drawer"), SimpleNamespace())
    assert reply.accepted and reply.previous == "pick up the cup" and announced == ["open the drawer"]
    assert client.instruction == "the last goal's", "run(instruction=) would have put the goal's over it"
    again = services.set_instruction(SimpleNamespace(instruction="open the drawer"), SimpleNamespace())
    assert again.accepted and "ignored" in again.message and again.previous == "open the drawer"
    client.instruction = "pick up the cup"  # run() put the goal's own in force, then observes
    services.first_observation(run)
    assert run.started and client.instruction == "open the drawer"
    later = services.set_instruction(SimpleNamespace(instruction="wave"), SimpleNamespace())
    assert later.previous == "open the drawer" and client.instruction == "wave"


def test_sim_time_bound_counts_from_the_first_clock_message_and_ends_the_goal():
    now = [0.0]
    clock = RunClock(lambda: now[0], sim_time=True)
    assert clock.start(2.0) == 2.0 + SIM_TIME_WALL_MARGIN_S  # the client's wall bound: a safety net
    assert not clock.expired() and clock.elapsed_s() is None  # no /clock yet
    now[0] = 100.0
    assert not clock.expired()  # starts counting here
    now[0] = 101.5
    assert not clock.expired() and clock.elapsed_s() == pytest.approx(1.5)
    now[0] = 102.0
    assert clock.expired()
    assert clock.finish() == pytest.approx(2.0) and clock.elapsed_s() is None and not clock.expired()


def test_wall_clock_runs_leave_the_bound_to_the_client():
    clock = RunClock(time.monotonic, sim_time=False)
    assert clock.start(3.0) == 3.0
    assert not clock.expired() and clock.finish() is None


def outcome(**fields) -> RunOutcome:
    return RunOutcome(**{"actions": 30, "chunks": 4, "elapsed_s": 2.0, "reason": "interrupted", **fields})


def test_the_outcome_carries_the_nodes_reason_and_the_ros_time_length():
    stopped = as_reported(outcome(instruction_swaps=1), reason="shutdown", elapsed_s=None)
    assert stopped.reason == "shutdown" and "shutdown" in str(stopped) and stopped.elapsed_s == 2.0
    assert stopped.instruction_swaps == 1
    simulated = as_reported(outcome(reason="timeout"), reason="timeout", elapsed_s=4.0)
    assert simulated.elapsed_s == 4.0 and simulated.reason == "timeout"


def progress(**fields):
    base = dict(running=True, actions=0, chunks=0, buffered=0, elapsed_s=0.0, underruns=0, instruction=None,
                warming=False, warming_eta_s=None, age_p50_s=None, age_max_s=None, lateness_p50_s=None,
                lateness_max_s=None)
    return SimpleNamespace(**{**base, **fields})


def test_feedback_is_the_goals_own_until_its_run_observed_and_acted():
    stale = progress(actions=40, chunks=5, elapsed_s=3.0, instruction="the last goal's")
    before = feedback_message(stale, started=False, instruction="pick up the cup", elapsed_s=None)
    assert (before.actions, before.chunks, before.elapsed_s, before.instruction) == (0, 0, 0.0, "pick up the cup")
    assert math.isnan(before.warming_eta_s)
    first = feedback_message(progress(elapsed_s=0.4), started=True, instruction="pick up the cup", elapsed_s=None)
    assert first.instruction == "pick up the cup" and first.elapsed_s == pytest.approx(0.4)
    later = feedback_message(progress(actions=9, chunks=2, elapsed_s=1.0, instruction="open the drawer"),
                             started=True, instruction="pick up the cup", elapsed_s=0.5)
    assert (later.actions, later.instruction, later.elapsed_s) == (9, "open the drawer", 0.5)


FRESHNESS = ("age_p50_s", "age_max_s", "lateness_p50_s", "lateness_max_s")


def test_age_and_lateness_reach_the_outcome_and_the_feedback_and_are_nan_where_unknown():
    from builtin_interfaces.msg import Time

    figures = dict(zip(FRESHNESS, (0.81, 1.2, 0.04, 0.35)))
    ending = dict(reason="timeout", message="", model="pi05-droid", instruction="pick up the cup", held=True,
                  stamp=Time())
    reported = outcome_message(outcome(reason="timeout", **figures), **ending)
    assert {name: getattr(reported, name) for name in FRESHNESS} == figures
    for unknown in (outcome_message(outcome(reason="timeout"), **ending), outcome_message(None, **ending)):
        assert all(math.isnan(getattr(unknown, name)) for name in FRESHNESS)
    during = feedback_message(progress(actions=9, **figures), started=True, instruction="pick up the cup",
                              elapsed_s=None)
    assert {name: getattr(during, name) for name in FRESHNESS} == figures
    # Before its run observed, the progress is the last goal's: none of its figures.
    before = feedback_message(progress(actions=40, **figures), started=False, instruction="pick up the cup",
                              elapsed_s=None)
    assert all(math.isnan(getattr(before, name)) for name in FRESHNESS)


def test_the_nodes_late_beats_reach_the_outcome_and_are_said_in_words():
    from builtin_interfaces.msg import Time

    from sequence_ai_ros.goal.outcome import late_words

    ending = dict(reason="timeout", message="", model="pi05-droid", instruction="pick up the cup", held=True,
                  stamp=Time())
    reported = outcome_message(outcome(reason="timeout", underruns=1, underrun_s=0.2), late_beats=(2, 0.47), **ending)
    assert (reported.late_beats, reported.late_beat_s) == (2, 0.47)
    assert (reported.underruns, reported.underrun_s) == (1, 0.2), "a late chunk stays the client's underrun"
    for none in (outcome_message(outcome(reason="timeout"), **ending), outcome_message(None, **ending)):
        assert (none.late_beats, none.late_beat_s) == (0, 0.0)
    assert late_words(1, 0.333) == ("1 command went out late (0.33 s in all): the node's threads did not run in "
                                    "time (a loaded machine), the control periods between were skipped")
    assert late_words(2, 0.47).startswith("2 commands went out late (0.47 s in all)")


def test_shutdown_waits_until_a_result_that_was_just_set_has_been_sent():
    """rclpy sends a goal's result from a done callback of the result's future, run as an executor
    task; deliver_results must not return before that task has run (else the executor is stopped
    under it), however the executor orders its tasks."""
    from rclpy.task import Future

    from sequence_ai_ros.policy_node import deliver_results
    from sequence_ai_ros.spinning import Spinning

    with Spinning() as spun:
        executor = spun.spin([], threads=3)
        sent = []
        results = [Future(executor=executor) for _ in range(2)]
        for result in results:  # what ActionServer registers for a client's get_result request
            result.add_done_callback(lambda f: (time.sleep(0.3), sent.append(f.result())))
        for number, result in enumerate(results):
            result.set_result(number)  # the execute callback returned
        assert deliver_results(results, executor, timeout_s=10.0)
        assert sorted(sent) == [0, 1], "deliver_results returned before the results were sent"
        # A result nobody asked for, set long ago: nothing to wait for.
        idle = Future(executor=executor)
        idle.set_result("old")
        started = time.monotonic()
        assert deliver_results([idle], executor, timeout_s=10.0) and time.monotonic() - started < 5.0


def test_every_ending_is_said_in_words_and_the_normal_ones_say_so():
    from sequence_ai_ros.goal.outcome import ending_in_words

    goal = SimpleNamespace(max_seconds=10.0, max_actions=0)
    assert ending_in_words("timeout", goal, 150) == \
        "ran its full max_seconds, 10 s (150 actions): the normal end of a time-bounded goal"
    assert ending_in_words("completed", SimpleNamespace(max_seconds=10.0, max_actions=40), 40) == \
        "played its max_actions, 40: the normal end of a goal bounded by actions"
    assert ending_in_words("raised:Unavailable", goal, 3) == "the policy call failed (Unavailable) (3 actions)"
    for reason in ("until", "interrupted", "canceled", "validate", "stale_input", "bad_input", "estop", "shutdown"):
        said = ending_in_words(reason, goal, None)
        assert said != reason and " " in said, reason
