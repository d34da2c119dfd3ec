"""The policy node in its own process, over real topics, against the local platform."""

from __future__ import annotations

import math
import os
import statistics
import time
from pathlib import Path

import pytest
from eventually import wait_until
from ros_harness import Planner, start_arm
from sequence_ai_ros.action import Act
from sequence_ai_ros.srv import SetInstruction

pytestmark = [pytest.mark.ros, pytest.mark.slow]

HZ = 15.0
PERIOD = 1.0 / HZ
# Generous bound for "within one control period" on a loaded 2-core machine.
STOP_BOUND_S = 2 * PERIOD + 0.15


def run_commands(arm, since: float, until: float):
    return [(t, v) for t, v in arm.command_log() if since <= t <= until]


def test_goal_publishes_commands_at_the_model_frequency_and_an_outcome(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform)
    feedback = []
    sent = time.monotonic()
    handle = planner.send("pick up the red cube", max_seconds=3.0, feedback=feedback)
    response = Planner.result(handle)
    result = response.result
    assert response.status == 4, "a timeout ends succeeded"  # GoalStatus.STATUS_SUCCEEDED
    assert result.status == Act.Result.STATUS_TIMEOUT
    assert result.outcome.reason == "timeout" and result.outcome.held
    # Reliable QoS: every command arrives, a lost sample after a repair (up to a heartbeat period).
    assert wait_until(lambda: len(run_commands(arm, sent, time.monotonic())) >= result.outcome.actions + 1, 5.0)
    commands = run_commands(arm, sent, time.monotonic())
    # Timing at the node (each command's publish time), not on arrival here: this process may get
    # commands late and in a burst after a repair, which says nothing about the node's timer.
    published_at = sorted(arm.sent_at[-len(commands):])
    times = published_at[:-1]  # the last one is the hold
    # The rate while commands flow; stalls for a late chunk are underruns, counted on their own.
    flowing = (times[-1] - times[0]) - result.outcome.underrun_s
    rate = (len(times) - 1) / flowing
    gaps = [round(b - a, 3) for a, b in zip(times, times[1:])]
    assert abs(rate - HZ) / HZ <= 0.10, f"command rate {rate:.2f} Hz outside underruns {result.outcome} {gaps}"
    # Every command on a tick, the run's first included: none left the node much less than a
    # period after the one before (the step and velocity checks assume a whole one).
    assert min(gaps) >= 0.5 / HZ, f"commands published {min(gaps) * 1000:.0f} ms apart: {gaps}"
    typical = 1.0 / statistics.median(b - a for a, b in zip(times, times[1:]))
    assert abs(typical - HZ) / HZ <= 0.4, f"typical interval is {1 / typical:.3f}s"
    assert result.outcome.actions == len(commands) - 1
    assert all(len(v) == 8 and all(math.isfinite(x) for x in v) for _, v in commands)
    assert wait_until(lambda: planner.outcomes, 3.0)
    published = planner.outcomes[-1]
    assert published.reason == "timeout" and published.actions == result.outcome.actions
    assert published.model == "pi05-droid" and published.final_instruction == "pick up the red cube"
    # Feedback at >= 2 Hz while the run lasted, by the run time each message carries (the node's
    # side; this process may receive reliable samples late, after a repair).
    assert wait_until(lambda: feedback and feedback[-1][1].elapsed_s >= result.outcome.elapsed_s - 1.0, 5.0)
    stamps = [fb.elapsed_s for _, fb in feedback]
    assert len(stamps) >= 5 and (len(stamps) - 1) / (stamps[-1] - stamps[0]) >= 2.0
    assert max(b - a for a, b in zip(stamps, stamps[1:])) <= 1.0, stamps
    # The goal's own instruction from the first message on (before the first request went out too).
    assert all(fb.instruction == "pick up the red cube" for _, fb in feedback), [fb.instruction for _, fb in feedback]
    # ...and it is not an instruction change.
    assert result.outcome.instruction_swaps == 0 and math.isnan(result.outcome.max_instruction_lag_s)


def fifo_threads(pid: int) -> int:
    """Threads of process `pid` under SCHED_FIFO (field 41 of /proc/<pid>/task/<tid>/stat is 1)."""
    count = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[38]) == os.SCHED_FIFO:
            count += 1
    return count


def test_the_timer_thread_always_and_the_goal_thread_while_driving_run_under_sched_fifo(ros, policy_node, platform):
    from test_realtime import fifo_permitted

    if not fifo_permitted():
        pytest.skip("SCHED_FIFO is not permitted for this user (the node warns and runs at ordinary priority)")
    process, arm, planner = start_arm(ros, policy_node, platform, realtime_priority=40)
    pid = process.process.pid
    assert fifo_threads(pid) == 1, "the timer's thread runs under SCHED_FIFO from the start"
    handle = planner.send("pick up the red cube", max_seconds=2.5)
    assert wait_until(lambda: fifo_threads(pid) == 2, 2.0), "the goal's thread is raised while it drives"
    result = Planner.result(handle).result
    assert result.outcome.reason == "timeout" and result.outcome.held
    assert wait_until(lambda: fifo_threads(pid) == 1, 2.0), "the goal's thread is back to ordinary priority"
    assert "SCHED_FIFO refused" not in process.output()


def test_instruction_change_reaches_the_worker_within_lookahead_plus_one_chunks(ros, policy_node, platform):
    from std_srvs.srv import Trigger

    process, arm, planner = start_arm(ros, policy_node, platform)
    handle = planner.send("pick up the red cube", max_seconds=4.0)
    assert wait_until(lambda: len(arm.command_log()) > 10, 10.0)
    called_at = time.time()
    reply = planner.call(planner.set_instruction, SetInstruction.Request(instruction="open the top drawer"))
    again = planner.call(planner.set_instruction, SetInstruction.Request(instruction="open the top drawer"))
    assert reply.accepted and reply.previous == "pick up the red cube"
    assert again.accepted and "ignored" in again.message
    assert time.time() - called_at < 1.0, "set_instruction must return at once"
    result = Planner.result(handle).result
    after = [r for r in platform.requests(limit=500) if r["time"] >= called_at]
    old_first = 0
    for record in after:
        if record.get("instruction") == "open the top drawer":
            break
        old_first += 1
    else:
        pytest.fail(f"the new instruction never reached the worker: {[r.get('instruction') for r in after]}")
    assert old_first <= 1 + 1, f"{old_first} requests still carried the old instruction"
    assert result.outcome.instruction_swaps == 1, "one change, and the goal's own instruction is none"
    assert result.outcome.max_instruction_lag_s < 3.0
    assert result.outcome.final_instruction == "open the top drawer"
    assert "open the top drawer" in planner.instructions
    # With no run, both services refuse and change nothing: a goal carries its own instruction.
    assert wait_until(lambda: planner.instructions[-1] == "open the top drawer", 3.0)
    idle = planner.call(planner.set_instruction, SetInstruction.Request(instruction="wave"))
    assert not idle.accepted and "no run in progress" in idle.message
    stop = planner.call(planner.interrupt, Trigger.Request())
    assert not stop.success and "no run in progress" in stop.message
    assert planner.instructions[-1] == "open the top drawer", "~/instruction changed without a run"


def test_interrupt_service_stops_within_one_control_period_and_holds(ros, policy_node, platform):
    from std_srvs.srv import Trigger

    process, arm, planner = start_arm(ros, policy_node, platform)
    handle = planner.send("pick up the red cube", max_seconds=10.0)
    assert wait_until(lambda: len(arm.command_log()) > 10, 10.0)
    called = time.time()  # wall clock, like the node's publish stamps (arm.sent_at)
    reply = planner.call(planner.interrupt, Trigger.Request())
    assert reply.success
    response = Planner.result(handle)
    assert response.status == 5  # GoalStatus.STATUS_CANCELED
    assert response.result.status == Act.Result.STATUS_INTERRUPTED
    assert response.result.outcome.reason == "interrupted" and response.result.outcome.held
    # Every command the outcome counts, and the hold, may reach this process late (it now and
    # then stalls for a second or more): wait for them all, then time them by when the node
    # published them (DDS source stamps), not by when they arrived.
    stamps = arm.settled_stamps(response.result.outcome.actions + 1)
    assert len(stamps) == response.result.outcome.actions + 1, "one command per action, then one hold"
    after = [t for t in stamps if t >= called]
    assert after, "no hold was published"
    assert after[-1] - called <= STOP_BOUND_S, f"last command {after[-1] - called:.3f}s after the interrupt"
    assert len(after) <= 3, f"{len(after)} commands after the interrupt"


def test_goal_cancel_stops_within_one_control_period_and_holds(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform)
    handle = planner.send("pick up the red cube", max_seconds=10.0)
    assert wait_until(lambda: len(arm.command_log()) > 10, 10.0)
    called = time.time()  # wall clock, like the node's publish stamps (arm.sent_at)
    assert planner.cancel(handle), "the cancel request was not answered"
    response = Planner.result(handle)
    assert response.status == 5
    assert response.result.status == Act.Result.STATUS_CANCELED
    assert response.result.outcome.reason == "canceled" and response.result.outcome.held
    stamps = arm.settled_stamps(response.result.outcome.actions + 1)  # as above
    assert len(stamps) == response.result.outcome.actions + 1, "one command per action, then one hold"
    after = [t for t in stamps if t >= called]  # the node's publish times, as above
    assert after, "no hold was published"
    assert after[-1] - called <= STOP_BOUND_S, f"last command {after[-1] - called:.3f}s after the cancel"
    assert len(after) <= 3, f"{len(after)} commands after the cancel"
    assert planner.outcomes and planner.outcomes[-1].reason == "canceled"


def test_estop_stops_within_one_control_period_holds_and_refuses_goals_until_released(ros, policy_node, platform):
    from std_msgs.msg import Bool

    from sequence_ai_ros.qos import LATCHED as ESTOP_QOS

    process, arm, planner = start_arm(ros, policy_node, platform, estop_topic="estop")
    estop = ros.node.create_publisher(Bool, f"{arm.ns}/estop", ESTOP_QOS)
    handle = planner.send("pick up the red cube", max_seconds=10.0)
    assert wait_until(lambda: len(arm.command_log()) > 10, 10.0)
    pressed = time.time()  # wall clock, like the node's publish stamps (arm.sent_at)
    estop.publish(Bool(data=True))
    response = Planner.result(handle)
    assert response.status == 6  # GoalStatus.STATUS_ABORTED
    assert response.result.status == Act.Result.STATUS_ESTOP
    outcome = response.result.outcome
    assert outcome.reason == "estop" and outcome.held
    stamps = arm.settled_stamps(outcome.actions + 1)  # by the node's publish stamps, as above
    assert len(stamps) == outcome.actions + 1, "one command per action, then one hold"
    after = [t for t in stamps if t >= pressed]
    assert after and after[-1] - pressed <= STOP_BOUND_S, f"last command {after[-1] - pressed:.3f}s after the e-stop"
    assert len(after) <= 3, f"{len(after)} commands after the e-stop"
    assert "e-stop" in planner.rejected("pick up the red cube", max_seconds=2.0)
    assert wait_until(lambda: planner.diagnostics is not None and planner.diagnostics.level == b"\x02", 5.0), \
        "diagnostics do not say the e-stop is engaged"
    estop.publish(Bool(data=False))
    assert wait_until(lambda: planner.diagnostics.level != b"\x02", 5.0)
    again = Planner.result(planner.send("pick up the red cube", max_seconds=1.0)).result
    assert again.status == Act.Result.STATUS_TIMEOUT and again.outcome.actions > 0


def test_stale_camera_stops_the_run_holds_and_says_which(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform, max_image_age_s=0.6)
    handle = planner.send("pick up the red cube", max_seconds=10.0)
    assert wait_until(lambda: len(arm.command_log()) > 5, 10.0)
    arm.silent_views.add("wrist_left")
    silenced = time.time()  # wall clock, like the node's publish stamps (arm.sent_at)
    response = Planner.result(handle)
    outcome = response.result.outcome
    assert response.status == 6  # GoalStatus.STATUS_ABORTED
    assert response.result.status == Act.Result.STATUS_STALE_INPUT
    assert outcome.reason == "stale_input" and "wrist_left" in outcome.message and outcome.held
    # When the node published its last command (the hold), not when it arrived here: this process
    # may receive reliable samples late, after a repair.
    assert wait_until(lambda: len(arm.sent_at) >= outcome.actions + 1, 5.0)
    assert max(arm.sent_at) - silenced <= 0.6 + STOP_BOUND_S + 0.2


def test_nan_actions_are_never_published_and_the_run_aborts_held(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform)
    handle = planner.send("pick up the red cube", max_seconds=10.0)
    assert wait_until(lambda: len(arm.command_log()) > 5, 10.0)
    platform.fault("nan_actions")
    response = Planner.result(handle)
    assert response.status == 6
    assert response.result.status == Act.Result.STATUS_POLICY_ERROR
    assert response.result.outcome.reason.startswith("raised:") and response.result.outcome.held
    assert all(all(math.isfinite(x) for x in v) for _, v in arm.command_log())


def test_over_limit_actions_are_refused_before_publishing(ros, policy_node, platform):
    # A joint window narrower than where the arm already is: the first command is out of limits.
    q_min = [-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973]
    q_max = [2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 1.0, 2.8973]  # joint 6 sits at 1.8 at home
    process, arm, planner = start_arm(ros, policy_node, platform, joint_position_max=q_max, joint_position_min=q_min)
    handle = planner.send("pick up the red cube", max_seconds=5.0)
    response = Planner.result(handle)
    assert response.result.status == Act.Result.STATUS_UNSAFE_ACTION
    assert response.result.outcome.reason == "validate"
    assert "fr3_joint6" in response.result.outcome.message
    commands = arm.settled_commands(1)
    assert len(commands) == 1, "only the hold may be published"
    assert commands[0][1][5] == pytest.approx(1.8), "the hold is where the arm is"


def test_second_goal_while_busy_is_rejected_with_a_reason(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform)
    first = planner.send("pick up the red cube", max_seconds=4.0)
    assert wait_until(lambda: len(arm.command_log()) > 3, 10.0)
    assert "busy" in planner.rejected("wave", max_seconds=4.0)
    assert Planner.result(first).result.status == Act.Result.STATUS_TIMEOUT


def test_invalid_goals_are_rejected_naming_the_field(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform)
    assert "max_seconds" in planner.rejected("pick up the red cube", max_seconds=0.0)
    assert "instruction" in planner.rejected("   ", max_seconds=3.0)
    assert arm.command_log() == [], "a rejected goal moves nothing"
    assert not planner.outcomes, "a rejected goal publishes no outcome"


def test_worker_restart_mid_run_continues_or_ends_held_with_a_reason(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform)
    handle = planner.send("pick up the red cube", max_seconds=5.0)
    assert wait_until(lambda: len(arm.command_log()) > 10, 10.0)
    platform.fault("restart_worker")
    response = Planner.result(handle)
    outcome = response.result.outcome
    assert outcome.held
    # the client re-pins through the gateway and carries on; if it cannot, the reason names the worker
    assert outcome.reason == "timeout" or (outcome.reason.startswith("raised:") and "worker" in response.result.message), \
        f"unclear ending: {outcome.reason}: {response.result.message}"
    assert all(all(math.isfinite(x) for x in v) for _, v in arm.command_log())


def test_warming_status_is_published_during_a_cold_start(ros, policy_node, platform):
    # The cold start lasts until the node has reported it, then 3 s more: a 3 s one timed from
    # when it was armed could be over before a slow-starting node (a loaded machine) first asked.
    platform.fault("warming", seconds=600.0, eta_s=3)
    process, ns = policy_node(platform)
    planner = Planner(ros.node, ns)
    assert wait_until(lambda: any(w.warming for w in planner.warming) or not process.running, 60.0), \
        process.output()[-2000:]
    platform.fault("warming", seconds=3.0, eta_s=3)
    assert wait_until(lambda: any(w.ready for w in planner.warming), 30.0), process.output()[-2000:]
    warming = [w for w in planner.warming if w.warming]
    assert warming, "no warming status before ready"
    assert warming[0].model == "pi05-droid" and not warming[0].ready
    assert all(0.0 <= w.eta_s <= 3.5 for w in warming), [w.eta_s for w in warming]  # the scripted cold start says ~3 s
    assert planner.warming[-1].ready and planner.warming[-1].waited_s >= 2.0


def test_api_key_never_appears_in_logs_parameters_or_topics(ros, policy_node, platform):
    import httpx
    from rcl_interfaces.srv import GetParameters, ListParameters

    process, arm, planner = start_arm(ros, policy_node, platform)
    Planner.result(planner.send("pick up the red cube", max_seconds=1.5))
    node_name = planner.act._action_name.rsplit("/", 1)[0]
    names = planner.call(ros.node.create_client(ListParameters, f"{node_name}/list_parameters"),
                         ListParameters.Request(), attempts=3).result.names
    assert names and not any("key" in n.lower() or "secret" in n.lower() for n in names)
    values = planner.call(ros.node.create_client(GetParameters, f"{node_name}/get_parameters"),
                          GetParameters.Request(names=list(names)), attempts=3).values
    assert len(values) == len(names)
    process.stop()
    secret = httpx.post(f"{platform.base_url}/v1/act/connect", json={"model": "pi05-droid", "session": "probe"},
                        headers={"Authorization": f"Bearer {platform.api_key}"}, timeout=10.0).json()["direct_secret"]
    texts = ([process.output(), str(values)] + [o.message for o in planner.outcomes]
             + [w.message for w in planner.warming] + planner.instructions + [str(planner.diagnostics)])
    for sensitive in (platform.api_key, secret):
        assert not any(sensitive in text for text in texts)


def test_parameters_are_read_only_so_a_live_edit_is_refused_not_ignored(ros, policy_node, platform):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import GetParameters, SetParameters

    _, _, planner = start_arm(ros, policy_node, platform)
    node_name = planner.act._action_name.rsplit("/", 1)[0]
    tighter = Parameter(name="max_step_rad", value=ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=0.05))
    result = planner.call(ros.node.create_client(SetParameters, f"{node_name}/set_parameters"),
                          SetParameters.Request(parameters=[tighter]), attempts=3).results[0]
    assert not result.successful and "read-only" in result.reason
    value = planner.call(ros.node.create_client(GetParameters, f"{node_name}/get_parameters"),
                         GetParameters.Request(names=["max_step_rad"]), attempts=3).values[0]
    assert value.double_value == 0.2


def test_two_namespaced_nodes_drive_two_arms_at_once(ros, policy_node, platform):
    # Four camera streams come from this one test process: allow slower frames than one arm needs,
    # and a wider step limit. When this process stalls, its arm doubles stop following, the next
    # chunk starts from where they stopped, and the seam jumps by more than 0.2 rad; the node
    # rightly aborts then (test_node_parts.py tests the step check), but that is not this test's subject.
    limits = dict(max_image_age_s=3.0, max_step_rad=0.6)
    _, arm_a, planner_a = start_arm(ros, policy_node, platform, **limits)
    _, arm_b, planner_b = start_arm(ros, policy_node, platform, **limits)
    a = planner_a.send("pick up the red cube", max_seconds=2.5)
    b = planner_b.send("open the drawer", max_seconds=2.5)
    ra, rb = Planner.result(a).result, Planner.result(b).result
    assert ra.status == rb.status == Act.Result.STATUS_TIMEOUT
    assert ra.outcome.actions > 20 and rb.outcome.actions > 20
    for arm, result in ((arm_a, ra), (arm_b, rb)):  # the last commands may still be on the wire
        wait_until(lambda arm=arm, result=result: len(arm.command_log()) >= result.outcome.actions + 1, 5.0)
    assert len(arm_a.command_log()) == ra.outcome.actions + 1
    assert len(arm_b.command_log()) == rb.outcome.actions + 1
    # different instructions drive different motions
    end_a, end_b = arm_a.command_log()[-1][1], arm_b.command_log()[-1][1]
    assert max(abs(x - y) for x, y in zip(end_a[:7], end_b[:7])) > 1e-3


def test_a_model_without_a_verified_velocity_conversion_refuses_to_start_naming_why(ros, policy_node, platform):
    process, _ = policy_node(platform, model="cosmos3-edge-policy-droid", command_interface="velocity",
                             camera_views=["exterior_1", "exterior_2", "wrist_left"],
                             camera_topics=["a", "b", "c"], camera_compressed=[False, False, False])
    assert process.process.wait(20) == 1
    output = process.output()
    assert "cosmos3-edge-policy-droid" in output and "command_interface: position" in output


def test_a_missing_camera_view_refuses_to_start_naming_it(ros, policy_node, platform):
    process, _ = policy_node(platform, camera_views=["exterior_1"], camera_topics=["a"], camera_compressed=[False])
    assert process.process.wait(20) == 1
    assert "wrist_left" in process.output()


def test_until_topic_ends_the_run_with_reason_until(ros, policy_node, platform):
    from std_msgs.msg import Bool

    process, arm, planner = start_arm(ros, policy_node, platform, until_topic="done")
    done = ros.node.create_publisher(Bool, f"{arm.ns}/done", 10)
    handle = planner.send("pick up the red cube", max_seconds=10.0)
    assert wait_until(lambda: len(arm.command_log()) > 5, 10.0)
    done.publish(Bool(data=True))
    response = Planner.result(handle)
    assert response.status == 4 and response.result.status == Act.Result.STATUS_UNTIL
    assert response.result.outcome.reason == "until" and response.result.outcome.held


def test_dry_run_computes_but_publishes_nothing(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform, dry_run=True)
    result = Planner.result(planner.send("pick up the red cube", max_seconds=1.5)).result
    assert result.status == Act.Result.STATUS_TIMEOUT and result.outcome.actions > 5
    time.sleep(0.3)
    assert arm.command_log() == []
    process.stop()
    assert "dry_run: position command" in process.output()


def test_joint_trajectory_commands_carry_names_and_positions(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform, command_type="joint_trajectory")
    result = Planner.result(planner.send("pick up the red cube", max_seconds=1.5)).result
    assert result.status == Act.Result.STATUS_TIMEOUT, result.message
    wait_until(lambda: len(arm.trajectories) >= result.outcome.actions + 1, 5.0)  # this process may receive late
    time.sleep(0.2)  # and a moment more for any extra one
    received = arm.trajectories
    assert len(received) == result.outcome.actions + 1
    first = received[0]
    assert list(first.joint_names) == [f"fr3_joint{i}" for i in range(1, 8)] + ["fr3_finger_joint1"]
    point = first.points[0]
    assert len(point.positions) == 8 and not point.velocities
    assert point.time_from_start.nanosec == pytest.approx(1e9 / HZ, rel=0.01)


def test_velocity_interface_holds_with_zero_velocity(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform, command_interface="velocity")
    result = Planner.result(planner.send("pick up the red cube", max_seconds=1.5)).result
    assert result.status == Act.Result.STATUS_TIMEOUT
    commands = arm.settled_commands(result.outcome.actions + 1)
    assert len(commands) >= result.outcome.actions + 1
    assert commands[-1][1][:7] == [0.0] * 7, "the hold of a velocity controller is zero"
    time.sleep(0.4)  # five more ticks: nothing after the final hold
    assert len(arm.command_log()) == len(commands)
    assert any(abs(v) > 1e-6 for _, c in commands[:-1] for v in c[:7]), "the run itself moved"


def test_preempt_policy_interrupts_the_running_goal_for_the_new_one(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform, busy_policy="preempt")
    first = planner.send("pick up the red cube", max_seconds=10.0)
    assert wait_until(lambda: len(arm.command_log()) > 5, 10.0)
    second = planner.send("open the drawer", max_seconds=1.5)
    preempted = Planner.result(first, timeout_s=10.0)
    assert preempted.status == 5 and preempted.result.outcome.reason == "interrupted"
    assert preempted.result.outcome.held
    finished = Planner.result(second)
    assert finished.result.status == Act.Result.STATUS_TIMEOUT
    assert finished.result.outcome.final_instruction == "open the drawer" and finished.result.outcome.actions > 5


def test_over_limit_actions_from_the_policy_are_never_published(ros, policy_node, monkeypatch):
    from sequence_ai.platform.spawn import LocalPlatform

    plugins = str(Path(__file__).with_name("plugins"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (plugins, os.environ.get("PYTHONPATH")) if p))
    with LocalPlatform("--policy", "overreaching_policy:rows") as wild:
        process, arm, planner = start_arm(ros, policy_node, wild)
        response = Planner.result(planner.send("wave", max_seconds=5.0))
    assert response.status == 6 and response.result.status == Act.Result.STATUS_UNSAFE_ACTION
    assert "fr3_joint2" in response.result.outcome.message and response.result.outcome.held
    commands = arm.settled_commands(1)
    assert len(commands) == 1, "only the hold may be published"
    assert commands[0][1][1] == pytest.approx(-0.5), "the hold is where the arm is"


def test_shutdown_mid_run_holds_once_and_reports_shutdown(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform)
    planner.send("pick up the red cube", max_seconds=20.0)
    assert wait_until(lambda: len(arm.command_log()) > 5, 10.0)
    stopped = time.time()  # wall clock, like the node's publish stamps (arm.sent_at)
    assert process.stop() == 0
    assert wait_until(lambda: planner.outcomes, 5.0), "no outcome published before the node went down"
    outcome = planner.outcomes[-1]
    assert outcome.reason == "shutdown" and outcome.held
    stamps = arm.settled_stamps(outcome.actions + 1)  # the last may still be on their way here
    assert len(stamps) >= outcome.actions + 1
    after = [t for t in stamps if t >= stopped]  # published after the stop, by the node's stamps
    assert 1 <= len(after) <= 3 and after[-1] - stopped <= 2.0


def test_diagnostics_report_loop_rate_latency_underruns_and_input_ages(ros, policy_node, platform):
    from diagnostic_msgs.msg import DiagnosticArray

    process, arm, planner = start_arm(ros, policy_node, platform)
    seen = []
    ros.node.create_subscription(DiagnosticArray, "/diagnostics",
                                 lambda m: seen.extend(s for s in m.status if s.name.startswith(arm.ns + "/")), 10)
    Planner.result(planner.send("pick up the red cube", max_seconds=2.5))
    assert wait_until(lambda: len(seen) >= 2, 5.0)
    values = {kv.key: kv.value for kv in seen[-1].values}
    assert float(values["control_hz_measured"]) == pytest.approx(HZ, rel=0.2)
    assert values["refill_latency_s"] and float(values["refill_latency_s"]) > 0
    assert "underruns" in values
    ages = {k: v for k, v in values.items() if k.startswith("age_s ")}
    assert {f"age_s {arm.ns}/joint_states", f"age_s {arm.ns}/cameras/wrist_left/image_raw"} <= set(ages)
    assert all(0.0 <= float(v) < 5.0 for v in ages.values()), ages


# A simulator of its own (a separate process, as Gazebo would be): simulated time runs at half the
# speed of the wall clock, published on /clock at 100 Hz. (From a thread of the test process it
# stalled for ~1 s at times while the harness created its ROS entities, and the node's clock with it.)
SIM_CLOCK = """
import sys, time
import rclpy
from builtin_interfaces.msg import Time
from rosgraph_msgs.msg import Clock
wall_start, until = float(sys.argv[1]), float(sys.argv[2])
rclpy.init()
node = rclpy.create_node("test_sim_clock")
publisher = node.create_publisher(Clock, "/clock", 10)
while time.monotonic() < until:
    sim_t = 1000.0 + 0.5 * (time.monotonic() - wall_start)
    publisher.publish(Clock(clock=Time(sec=int(sim_t), nanosec=int((sim_t % 1) * 1e9))))
    time.sleep(0.01)
"""


def test_use_sim_time_paces_commands_and_bounds_the_goal_by_the_simulated_clock(ros, policy_node, platform):
    import subprocess
    import sys

    from sequence_ai_ros.processes import ros_environment

    max_seconds = 2.0
    wall_start = time.monotonic()
    simulator = subprocess.Popen([sys.executable, "-P", "-c", SIM_CLOCK, str(wall_start), str(wall_start + 120)],
                                 env=ros_environment())
    try:
        process, arm, planner = start_arm(ros, policy_node, platform, use_sim_time=True)
        feedback = []
        sent = time.time()  # wall clock, like the node's publish stamps (arm.sent_at)
        response = Planner.result(planner.send("pick up the red cube", max_seconds=max_seconds, feedback=feedback))
    finally:
        simulator.kill()
        simulator.wait(5)
    result = response.result
    # Timing by the node's publish stamps: this process may receive reliable samples late.
    assert wait_until(lambda: len(arm.sent_at) >= result.outcome.actions + 1, 5.0)
    published = sorted(arm.sent_at)
    times = published[:-1]  # the last one is the hold
    flowing = (times[-1] - times[0]) - result.outcome.underrun_s
    rate = (len(times) - 1) / flowing
    assert rate == pytest.approx(0.5 * HZ, rel=0.25), f"{rate:.1f} commands per wall second"
    # max_seconds is simulated time: at half speed a 2 s goal lasts ~4 s of wall time (it ended
    # after 2 s, on the wall clock, before the node bounded it by the ROS clock).
    assert response.status == 4 and result.status == Act.Result.STATUS_TIMEOUT, result.message
    assert result.outcome.reason == "timeout" and result.outcome.held
    wall = published[-1] - sent
    assert 2 * max_seconds * 0.85 <= wall <= 2 * max_seconds + 1.5, f"a {max_seconds:g} s goal took {wall:.2f} s of wall time"
    # elapsed_s is simulated time too, in the outcome and in the feedback.
    assert max_seconds <= result.outcome.elapsed_s <= max_seconds + 0.5, result.outcome.elapsed_s
    assert feedback and max(fb.elapsed_s for _, fb in feedback) <= max_seconds + 0.5, [fb.elapsed_s for _, fb in feedback]
