"""The policy node in its own process, over real topics, against the local platform: the tests
that need parameters of their own, a cold start, or that stop the node (the goals a node with the
default parameters serves are in test_policy_node_goals.py, on one node)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from eventually import wait_until
from ros_harness import Planner, log_stamps, logged_at, start_arm
from sequence_ai_ros.action import Act

pytestmark = [pytest.mark.ros, pytest.mark.slow]

HZ = 15.0
PERIOD = 1.0 / HZ
# Generous bound for "within one control period" on a loaded 2-core machine.
STOP_BOUND_S = 2 * PERIOD + 0.15


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
    from fifo_probe import fifo_permitted

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


def test_stale_camera_stops_the_run_holds_and_says_which(ros, policy_node, platform):
    """Timed by DDS source stamps, both taken where the samples were written: the last wrist_left
    frame this process published (read back by a subscription of its own) and the node's hold."""
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image

    max_age_s = 0.6
    process, arm, planner = start_arm(ros, policy_node, platform, max_image_age_s=max_age_s)
    frames = []  # when each wrist_left frame was published
    watch = ros.node.create_subscription(Image, f"{arm.ns}/cameras/wrist_left/image_raw",
                                         lambda _m, info: frames.append(info["source_timestamp"] * 1e-9),
                                         qos_profile_sensor_data)
    handle = planner.send("pick up the red cube", max_seconds=10.0)
    assert wait_until(lambda: len(arm.command_log()) > 5, 10.0)
    arm.silent_views.add("wrist_left")
    response = Planner.result(handle)
    ros.node.destroy_subscription(watch)
    outcome = response.result.outcome
    assert response.status == 6  # GoalStatus.STATUS_ABORTED
    assert response.result.status == Act.Result.STATUS_STALE_INPUT
    assert outcome.reason == "stale_input" and "wrist_left" in outcome.message and outcome.held
    # When the node published its last command (the hold), not when it arrived here: this process
    # may receive reliable samples late, after a repair.
    assert wait_until(lambda: len(arm.sent_at) >= outcome.actions + 1, 5.0)
    held_after = max(arm.sent_at) - max(frames)
    # Not before the frame was stale (its age counts from its arrival, after its publish); then
    # within a stop (a frame this best-effort subscription missed would add a period).
    assert max_age_s <= held_after <= max_age_s + STOP_BOUND_S + 0.3, \
        f"held {held_after:.3f}s after the last frame (limit {max_age_s}s)"


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


def test_a_node_the_machine_did_not_run_for_a_while_reports_its_late_command_and_never_bursts(
        ros, policy_node, platform):
    """The node's process stopped (SIGSTOP) for 0.4 s mid-goal, as a loaded machine sometimes leaves it
    unscheduled (a CI run's goal had one 0.40 s gap in its commands, no underrun): the periods it
    missed are skipped, not made up by a burst, the node reports that command as a late beat, as
    late as its own publish stamps say, and the rest of the goal plays at the model's rate. Timed by
    the node's publish stamps (`sent_at`) and its outcome, never by this process's clock."""
    import signal
    import threading

    # Inputs older than the stop must not end the run (the stall is the subject here, not staleness).
    process, arm, planner = start_arm(ros, policy_node, platform, max_image_age_s=5.0, max_joint_state_age_s=5.0)
    pid, sent_wall = process.process.pid, time.time()
    handle = planner.send("pick up the red cube", max_seconds=3.0)
    assert wait_until(lambda: sum(t >= sent_wall for t in list(arm.sent_at)) >= 10, 10.0), "never moved"
    os.kill(pid, signal.SIGSTOP)
    try:
        threading.Event().wait(0.4)  # the stall itself
    finally:
        os.kill(pid, signal.SIGCONT)
    result = Planner.result(handle).result
    outcome = result.outcome
    assert outcome.reason == "timeout" and outcome.held, outcome
    assert wait_until(lambda: sum(t >= sent_wall for t in list(arm.sent_at)) >= outcome.actions + 1, 5.0)
    times = sorted(t for t in arm.sent_at if t >= sent_wall)[:-1]  # the last one is the hold
    gaps = [round(b - a, 3) for a, b in zip(times, times[1:])]
    stall = max(gaps)
    assert stall >= 0.4, f"no command gap as long as the stop: {gaps}"
    assert min(gaps) >= 0.25 * PERIOD, f"a burst after the stall: {gaps}"  # the node keeps half a period
    # As late as the node's own stamps say: the stall's interval less one period, and any other late
    # beat. (A stop that fell while the loop waited for a late chunk is that underrun's time instead.)
    # (30 ms an interval: the node reads its clock for a late beat just after publishing, the DDS
    # stamp is taken inside the publish, and a loaded machine can delay the one from the other)
    slack = 0.03
    late = sum(g - PERIOD for g in gaps if g > PERIOD)  # every interval's time past its period
    assert outcome.late_beat_s <= late + slack * max(1, outcome.late_beats), (outcome, gaps)
    if outcome.underruns == 0:
        assert outcome.late_beats >= 1, f"the stall went unreported: {outcome}"
        assert outcome.late_beat_s >= stall - PERIOD - slack, (outcome, gaps)
    else:
        assert outcome.late_beat_s + outcome.underrun_s >= stall - 2 * PERIOD - slack, (outcome, gaps)
    rate = (len(times) - 1) / ((times[-1] - times[0]) - outcome.underrun_s - outcome.late_beat_s)
    assert abs(rate - HZ) / HZ <= 0.10, f"command rate {rate:.2f} Hz besides the late beats: {outcome} {gaps}"
    assert "went out late" in result.message and "went out late" in outcome.message, result.message


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


def test_two_namespaced_nodes_drive_two_arms_at_once(ros, policy_node, platform):
    # Four camera streams come from this one test process: allow slower frames than one arm needs,
    # and a wider step limit. When this process stalls, its arm doubles stop following, the next
    # chunk starts from where they stopped, and the seam jumps by more than 0.2 rad; the node
    # rightly aborts then (control/test_safety.py tests the step check), but that is not this test's subject.
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


def test_dry_run_computes_but_publishes_nothing(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform, dry_run=True)
    result = Planner.result(planner.send("pick up the red cube", max_seconds=1.5)).result
    assert result.status == Act.Result.STATUS_TIMEOUT and result.outcome.actions > 5
    # A message the node published after its result reached us: a command of the run came before.
    assert planner.diagnosed_after(time.time()) is not None, "no diagnostics from the node"
    assert arm.command_log() == []
    process.stop()
    assert "dry_run: position command" in process.output()


def test_joint_trajectory_commands_carry_names_and_positions(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform, command_type="joint_trajectory")
    result = Planner.result(planner.send("pick up the red cube", max_seconds=1.5)).result
    assert result.status == Act.Result.STATUS_TIMEOUT, result.message
    wait_until(lambda: len(arm.trajectories) >= result.outcome.actions + 1, 5.0)  # this process may receive late
    # and until the node published something after the hold arrived here, for any extra one
    assert planner.diagnosed_after(time.time()) is not None, "no diagnostics from the node"
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
    # five more ticks by the node's clock (its diagnostics, stamped after the hold's stamp): nothing after the hold
    assert planner.diagnosed_after(arm.sent_at[-1] + 5 * PERIOD) is not None, "no diagnostics from the node"
    assert len(arm.command_log()) == len(commands)
    assert any(abs(v) > 1e-6 for _, c in commands[:-1] for v in c[:7]), "the run itself moved"


def test_preempt_policy_interrupts_the_running_goal_for_the_new_one(ros, policy_node, platform):
    process, arm, planner = start_arm(ros, policy_node, platform, busy_policy="preempt")
    first = planner.send("pick up the red cube", max_seconds=10.0)
    assert wait_until(lambda: len(arm.command_log()) > 5, 10.0)
    second = planner.send("open the drawer", max_seconds=1.5)
    preempted = Planner.result(first, timeout_s=10.0)
    assert preempted.status == 6 and preempted.result.outcome.reason == "interrupted"  # GoalStatus.STATUS_ABORTED
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


def test_shutdown_mid_run_holds_once_reports_shutdown_and_the_api_key_never_appears(ros, policy_node, platform):
    import httpx
    from rcl_interfaces.srv import GetParameters, ListParameters

    process, arm, planner = start_arm(ros, policy_node, platform)
    # No parameter holds or names the key.
    node_name = planner.act._action_name.rsplit("/", 1)[0]
    names = planner.call(ros.node.create_client(ListParameters, f"{node_name}/list_parameters"),
                         ListParameters.Request(), attempts=3).result.names
    assert names and not any("key" in n.lower() or "secret" in n.lower() for n in names)
    values = planner.call(ros.node.create_client(GetParameters, f"{node_name}/get_parameters"),
                          GetParameters.Request(names=list(names)), attempts=3).values
    assert len(values) == len(names)

    # Ctrl-C mid-run: one hold, outcome shutdown.
    planner.send("pick up the red cube", max_seconds=20.0)
    assert wait_until(lambda: len(arm.command_log()) > 5, 10.0)
    before = len(log_stamps(process, "stop requested: shutdown"))
    assert process.stop() == 0
    assert wait_until(lambda: planner.outcomes, 5.0), "no outcome published before the node went down"
    outcome = planner.outcomes[-1]
    assert outcome.reason == "shutdown" and outcome.held
    stamps = arm.settled_stamps(outcome.actions + 1)  # the last may still be on their way here
    assert len(stamps) >= outcome.actions + 1
    stopped = logged_at(process, "stop requested: shutdown", before)  # the node's clock, as it took the signal
    after = [t for t in stamps if t >= stopped]  # published after it, by the node's stamps
    assert 1 <= len(after) <= 3 and after[-1] - stopped <= 2.0

    # The whole life of the node, start to shutdown: neither the key nor the worker's secret in
    # its log, its parameters or anything it published.
    secret = httpx.post(f"{platform.base_url}/v1/act/connect", json={"model": "pi05-droid", "session": "probe"},
                        headers={"Authorization": f"Bearer {platform.api_key}"}, timeout=10.0).json()["direct_secret"]
    texts = ([process.output(), str(values)] + [o.message for o in planner.outcomes]
             + [w.message for w in planner.warming] + planner.instructions + [str(planner.diagnostics)])
    for sensitive in (platform.api_key, secret):
        assert not any(sensitive in text for text in texts)


# A simulator of its own (a separate process, as Gazebo would be): simulated time runs at half the
# speed of the wall clock, published on /clock at 100 Hz (sim_clock.py).
SIM_CLOCK = Path(__file__).resolve().parent / "sim_clock.py"


def test_use_sim_time_paces_commands_and_bounds_the_goal_by_the_simulated_clock(ros, policy_node, platform):
    import subprocess
    import sys

    from sequence_ai_ros.tools.processes import ros_environment

    max_seconds = 2.0
    wall_start = time.monotonic()
    simulator = subprocess.Popen([sys.executable, str(SIM_CLOCK), str(wall_start), str(wall_start + 120)],
                                 env=ros_environment())
    try:
        process, arm, planner = start_arm(ros, policy_node, platform, use_sim_time=True)
        feedback = []
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
    # By the node's stamps, first command to hold: a little short of the goal (its first chunk came
    # first), so the lower bound has room for a slow first request on a loaded machine.
    wall = published[-1] - published[0]
    assert 2 * max_seconds * 0.75 <= wall <= 2 * max_seconds + 1.5, f"a {max_seconds:g} s goal took {wall:.2f} s of wall time"
    # elapsed_s is simulated time too, in the outcome and in the feedback.
    assert max_seconds <= result.outcome.elapsed_s <= max_seconds + 0.5, result.outcome.elapsed_s
    assert feedback and max(fb.elapsed_s for _, fb in feedback) <= max_seconds + 0.5, [fb.elapsed_s for _, fb in feedback]
