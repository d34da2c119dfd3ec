"""The Policy handle: predict, next_action, act, instructions, validation, threads."""

from __future__ import annotations

import threading
import time
import warnings

import pytest
from _loop_robot import Robot, observation, policy_for, run_kwargs
from eventually import wait_until

import sequence_ai
from sequence_ai import ChunkExhausted, InvalidRequest, SequencesError
from sequence_ai._policy import Policy


def test_predict_returns_the_full_chunk_and_buffers_the_open_loop_part(platform):
    with policy_for(platform) as policy:
        prediction = policy.predict(observation())
        assert policy.buffered == 8
    chunk = prediction.action_chunk
    assert len(chunk) == 15 and chunk.open_loop_horizon == 8
    assert chunk.control_frequency_hz == 15.0 and chunk.covers_seconds == 1.0
    assert chunk.action_space == "joint_delta" and chunk.action_dim == 8
    assert str(chunk) == "ActionChunk(15 steps x 8 dims, joint_delta, droid_franka, 15 Hz, covers 1s, replan after 8)"
    assert prediction.id.startswith("r-") and prediction.model.endswith("pi05-droid")


def test_next_action_serves_from_the_buffer_and_ignores_the_observation(platform):
    with policy_for(platform) as policy:
        first = policy.next_action(observation())
        assert policy.buffered == 7
        for _ in range(7):
            policy.next_action(observation())
        assert len(platform.requests()) == 1
        policy.next_action(observation())
        assert len(platform.requests()) == 2
    assert len(first) == 8


def test_next_action_with_empty_buffer_and_no_observation_raises_chunk_exhausted(platform):
    with policy_for(platform) as policy, pytest.raises(ChunkExhausted):
        policy.next_action()


def test_act_overwrites_the_instruction_on_every_observation(platform):
    robot = Robot(instruction="the observation's own sentence")
    with policy_for(platform) as policy:
        out = policy.act("stack the blocks", robot.observe, robot.act, max_seconds=1.0, validate=robot.validate,
                         hold=robot.hold, max_actions=12, progress=False)
        assert policy.instruction is None  # act() clears its latch afterwards
    assert {r["instruction"] for r in platform.requests()} == {"stack the blocks"}
    assert out.instruction_swaps == 1


def test_act_requires_a_positive_max_seconds(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        for bad in (0, -1):
            with pytest.raises(ValueError):
                policy.act("pick", robot.observe, robot.act, max_seconds=bad)
        with pytest.raises(TypeError):
            policy.act("pick", robot.observe, robot.act)  # no default


def test_act_until_true_finishes_early_with_hold(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.act("pick", robot.observe, robot.act, max_seconds=5.0, until=lambda: len(robot.actions) >= 5,
                         hold=robot.hold, validate=robot.validate, progress=False)
    assert out.reason == "until" and out.actions == 5 and robot.holds == 1


def test_act_max_seconds_ends_with_timeout(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        out = policy.act("pick", robot.observe, robot.act, max_seconds=0.6, hold=robot.hold,
                         validate=robot.validate, progress=False)
    assert out.reason == "timeout" and robot.holds == 1
    assert 0.55 <= out.elapsed_s < 1.0


def test_validate_false_stops_and_the_action_is_not_executed(platform):
    robot = Robot()
    seen = []

    def validate(action):
        seen.append(action)
        return len(seen) < 4

    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot, validate=validate), max_actions=20)
    assert out.reason == "validate" and out.actions == 3 and len(robot.actions) == 3
    assert seen[3] not in robot.actions[3:] and robot.holds == 1


def test_run_requires_keyword_max_actions_and_sane_arguments(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        with pytest.raises(TypeError):
            policy.run(robot.observe, robot.act)
        with pytest.raises(TypeError):  # keyword-only: a positional count is refused too
            policy.run(robot.observe, robot.act, 5)
        for bad in ({"max_actions": 0}, {"max_actions": 5, "lookahead": 0}):
            with pytest.raises(ValueError):
                policy.run(**run_kwargs(robot), **bad)


def test_run_without_validate_warns_once_per_process(platform, monkeypatch):
    import sequence_ai._policy as policy_module

    monkeypatch.setattr(policy_module, "_warned_no_validate", False)
    robot = Robot()
    with policy_for(platform) as policy, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy.run(**run_kwargs(robot, validate=None), max_actions=2)
        policy.run(**run_kwargs(robot, validate=None), max_actions=2)
    assert sum("validate" in str(w.message) for w in caught) == 1


def test_set_instruction_takes_effect_on_the_next_request_without_stopping(platform):
    robot = Robot(instruction="first")
    played = []  # the actions as run() handed them: each knows whether a new instruction went with its request

    def act(action):
        robot.act(action)
        played.append(action)
        if len(played) == 5:
            policy.set_instruction("second")

    with policy_for(platform) as policy:
        out = policy.run(**run_kwargs(robot, act=act), max_actions=40)
        assert policy.instruction == "second"  # a latch set by set_instruction persists
    sent = [r["instruction"] for r in platform.requests()]
    assert sent[0] == "first" and sent[-1] == "second" and sent == sorted(sent), sent  # never back to "first"
    assert out.reason == "completed" and out.instruction_swaps == 1
    assert out.max_instruction_lag_s is not None and out.max_instruction_lag_s > 0
    assert "1 instruction swaps" in str(out)
    # Counted in actions, not seconds (a loaded machine stretches the seconds): the rows already
    # buffered and those of one request in flight play first, at most two open-loop windows.
    first_new = next(i for i, a in enumerate(played) if a.swap_since is not None)
    assert 5 <= first_new <= 5 + 2 * 8, first_new


def test_each_action_carries_the_instruction_its_request_carried(platform):
    # The instruction in force goes on each request, replacing the observation's own, and on each
    # action its chunk produced: run(instruction=) first, then the one set_instruction() latched.
    robot = Robot(instruction="the robot's own")
    played = []
    with policy_for(platform) as policy:
        timer = threading.Timer(0.3, policy.set_instruction, args=("second",))
        timer.start()
        out = policy.run(**run_kwargs(robot, act=played.append), max_actions=40, instruction="first")
    sent = {r["rid"]: r["instruction"] for r in platform.requests()}
    assert out.reason == "completed" and set(sent.values()) == {"first", "second"}, sent
    assert [action.instruction for action in played] == [sent[action.rid] for action in played]
    assert played[0].instruction == "first" and played[-1].instruction == "second"


def test_set_instruction_with_the_same_string_is_ignored_and_rejects_non_strings(platform):
    with policy_for(platform) as policy:
        policy.set_instruction("a")
        policy.set_instruction("a")
        assert policy._latch.consume()[1] is not None and policy._latch.consume()[1] is None
        with pytest.raises(TypeError):
            policy.set_instruction(3)


def test_second_thread_driving_the_same_policy_raises(platform):
    platform.fault("latency", ms=400)
    robot = Robot()
    errors = []
    with policy_for(platform) as policy:
        driver = threading.Thread(target=lambda: policy.run(**run_kwargs(robot), max_actions=8))
        driver.start()
        assert wait_until(lambda: policy.progress().running, timeout_s=5.0)
        try:
            policy.predict(observation())
        except SequencesError as exc:
            errors.append(exc)
        driver.join(10)
    assert errors and "another thread" in str(errors[0])


def test_a_second_thread_calling_act_is_refused_before_it_touches_the_running_instruction(platform):
    platform.fault("latency", ms=200)
    robot = Robot()
    seen, errors = [], []
    with policy_for(platform) as policy:
        driver = threading.Thread(target=lambda: policy.act("pick up the cup", robot.observe, robot.act,
                                                            max_seconds=3.0, max_actions=20, validate=robot.validate,
                                                            progress=False))
        driver.start()
        assert wait_until(lambda: policy.progress().running, timeout_s=5.0)
        try:
            policy.act("intruder", robot.observe, robot.act, max_seconds=1.0, validate=robot.validate)
        except SequencesError as exc:
            errors.append(exc)
        seen.append(policy.instruction)
        driver.join(15)
    assert errors and "another thread" in str(errors[0])
    assert seen == ["pick up the cup"]
    assert {r["instruction"] for r in platform.requests()} == {"pick up the cup"}


def test_instruction_reports_the_observations_own_sentence_during_a_plain_run(platform):
    robot = Robot(instruction="wipe the table")
    seen = []
    with policy_for(platform) as policy:
        assert policy.instruction is None

        def act(row):
            seen.append(policy.instruction)
            robot.act(row)

        policy.run(**run_kwargs(robot, act=act), max_actions=6)
        assert policy.instruction is None  # no run, nothing latched
    assert seen and set(seen) == {"wipe the table"}


def test_two_concurrent_policies_are_independent(platform):
    robots = [Robot("left arm"), Robot("right arm")]
    outs = [None, None]
    sessions = [None, None]

    def drive(i):
        with policy_for(platform) as policy:
            sessions[i] = policy.session
            outs[i] = policy.run(**run_kwargs(robots[i]), max_actions=20)

    threads = [threading.Thread(target=drive, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert [o.reason for o in outs] == ["completed", "completed"]
    assert [o.actions for o in outs] == [20, 20] and sessions[0] != sessions[1]
    episodes = {r["instruction"]: set() for r in platform.requests()}
    for r in platform.requests():
        episodes[r["instruction"]].add(r["episode_id"])
    assert episodes["left arm"].isdisjoint(episodes["right arm"])


def test_progress_is_readable_from_another_thread_while_running(platform):
    robot = Robot(instruction="wave")
    snapshots = []
    with policy_for(platform) as policy:
        def watch():
            while len(snapshots) < 200 and (not snapshots or snapshots[-1].running or len(snapshots) < 3):
                snapshots.append(policy.progress())
                time.sleep(0.05)

        watcher = threading.Thread(target=watch)
        watcher.start()
        policy.run(**run_kwargs(robot), max_actions=20)
        watcher.join(5)
    live = [s for s in snapshots if s.running]
    assert live and live[-1].actions > 0 and live[-1].instruction == "wave"
    assert any(s.refill_latency_s is not None for s in live)


def test_episode_end_is_sent_after_every_run(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        policy.run(**run_kwargs(robot), max_actions=3)
        policy.run(**run_kwargs(robot, validate=lambda a: False), max_actions=3)
    ends = platform.stats().get("worker", {}).get("POST /act/episode_end", {})
    assert sum(ends.values()) == 2


def test_episode_id_is_sent_by_run_and_not_by_predict(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        policy.predict(observation())
        policy.run(**run_kwargs(robot), max_actions=10, episode_id="ep-1")
    ids = [r["episode_id"] for r in platform.requests()]
    assert ids[0] is None and set(ids[1:]) == {"ep-1"}


def test_validate_warn_warns_about_a_missing_view_and_sends(platform):
    with policy_for(platform, validate="warn") as policy, pytest.warns(UserWarning, match="wrist_left"), \
            pytest.raises(InvalidRequest):
        policy.predict(observation(views=("exterior_1",)))  # the worker then answers 400
    assert len(platform.requests()) == 1


def test_validate_strict_refuses_a_missing_view_before_sending(platform):
    with policy_for(platform, validate="strict") as policy, pytest.raises(InvalidRequest, match="wrist_left"):
        policy.predict(observation(views=("exterior_1",)))
    assert platform.requests() == []


def test_validate_off_skips_the_check_and_the_catalogue_lookup(platform):
    with policy_for(platform, validate="off") as policy, warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidRequest):
            policy.predict(observation(views=("exterior_1",)))
    assert "GET /v1/models" not in platform.stats().get("gateway", {})


def test_spec_is_fetched_once(platform):
    with policy_for(platform) as policy:
        first, second = policy.spec(), policy.spec()
    assert first is second and first.camera_views == ("exterior_1", "wrist_left")
    assert sum(platform.stats()["gateway"]["GET /v1/models"].values()) == 1


def test_ready_and_wait_until_ready_report_a_cold_worker(platform):
    platform.fault("warming", seconds=1.2, eta_s=7)
    with policy_for(platform) as policy:
        ready, eta = policy.ready()
        assert (ready, eta) == (False, 7.0)
        waited = policy.wait_until_ready(timeout_s=10, poll_s=0.2)
        assert 0.5 < waited < 5 and policy.ready() == (True, None)


def test_a_stale_interrupt_never_aborts_a_later_wait_until_ready(platform):
    platform.fault("warming", seconds=0.8, eta_s=1)
    with policy_for(platform) as policy:
        policy.interrupt()
        waited = policy.wait_until_ready(timeout_s=10, poll_s=0.2)
    assert waited > 0.3


def test_wait_until_ready_times_out_with_a_warming_unavailable(platform):
    platform.fault("warming", seconds=30, eta_s=30)
    with policy_for(platform) as policy, pytest.raises(sequence_ai.Unavailable) as info:
        policy.wait_until_ready(timeout_s=0.6, poll_s=0.2)
    assert info.value.warming and info.value.status == 503


def test_wait_until_ready_polls_not_ready_answers_and_passes_a_refused_question_on(platform):
    # Only an answer saying "not ready" is waited out; a warming 503 to the readiness question
    # itself ends the wait as it came (the gateway's error, not "still loading after 10s").
    platform.fault("warming", seconds=30, eta_s=30, ready_status=503)
    with policy_for(platform) as policy, pytest.raises(sequence_ai.Unavailable) as info:
        policy.wait_until_ready(timeout_s=10, poll_s=0.2)
    assert info.value.warming and "after 10s" not in info.value.message, info.value
    assert sum(platform.stats()["gateway"]["GET /v1/act/ready"].values()) == 1  # asked once, not polled


def test_policy_is_exported_and_is_a_context_manager(platform):
    assert sequence_ai.Policy is Policy
    with policy_for(platform) as policy:
        assert isinstance(policy, Policy)
    assert policy._closed


def test_a_run_refused_by_validate_leaves_nothing_for_the_next_run(platform):
    robot = Robot()
    with policy_for(platform) as policy:
        policy.run(**run_kwargs(robot, validate=lambda a: len(robot.actions) < 2), max_actions=20)
        assert policy.buffered == 0


@pytest.mark.parametrize("take_over, left", [(None, 15 - 3), (False, 8 - 3)])
def test_a_completed_run_leaves_its_rows_for_the_next_run(platform, take_over, left):
    # taking over, a chunk's rows all stay buffered (15); appending, its window (8)
    robot = Robot()
    with policy_for(platform) as policy:
        policy.run(**run_kwargs(robot), max_actions=3, take_over=take_over)
        assert policy.buffered == left
        out = policy.run(**run_kwargs(robot), max_actions=5, take_over=take_over)
    assert out.chunks == 0 and len(platform.requests()) == 1  # the rows left end it: no request


def test_predict_waits_out_a_cold_worker_and_books_the_warmup(platform):
    platform.fault("warming", seconds=1.0, eta_s=1)
    calls = []
    with policy_for(platform, on_warming=lambda waited, eta: calls.append(eta)) as policy, \
            pytest.warns(UserWarning, match="warming"):
        prediction = policy.predict(observation())
    assert calls and prediction.perf["warmup_ms"] >= 900


def test_startup_timeout_zero_opts_out_of_the_warm_wait(platform):
    platform.fault("warming", seconds=30)
    robot = Robot()
    with policy_for(platform, startup_timeout_s=0) as policy, pytest.raises(sequence_ai.Unavailable) as info:
        policy.run(**run_kwargs(robot), max_actions=5)
    assert info.value.warming and robot.holds == 1


def test_a_closed_policy_refuses_to_drive(platform):
    robot = Robot()
    policy = policy_for(platform)
    policy.close()
    policy.close()  # idempotent
    with pytest.raises(SequencesError, match="closed"):
        policy.run(**run_kwargs(robot), max_actions=5)
    with pytest.raises(SequencesError, match="closed"):
        policy.predict(observation())


def test_progress_shows_a_warm_wait_in_predict(platform):
    platform.fault("warming", seconds=1.5, eta_s=2)
    seen = []
    with policy_for(platform, on_warming=lambda waited, eta: None) as policy, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        watcher = threading.Thread(target=lambda: wait_until(lambda: seen.append(policy.progress()) or
                                                             seen[-1].warming, timeout_s=5.0))
        watcher.start()
        policy.predict(observation())
        watcher.join(5)
    warming = [s for s in seen if s.warming]
    assert warming and warming[-1].warming_eta_s >= 1 and not warming[-1].running
