"""The fault matrix: every fault of the local platform × every driving level (run, act,
next_action, the ROS node), each asserting the behaviour docs/RELIABILITY.md documents for its
cell — transparent recovery where the guide promises it, otherwise a clear error of the named
class; hold exactly once on every early ending (never on a completed client run; the node holds
once on every ending); no invalid action acted or published; an outcome returned or published.

The detailed behaviour of each fault at the `run` level is pinned by test/client/test_faults.py;
this file is the breadth: the same faults through every level, in one table (printed at the end
of the session by conftest.py). Client cells run at 60 Hz (they pin what happens, not the pace);
the ROS cells run at the model's 15 Hz on one node shared by the module.
"""

from __future__ import annotations

import math
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Callable, List, Optional

import pytest
from _hostile import CHUNKED_HEAD, HostileUpstream, chunk_answer, echo, endless, send, trickle
from _loop_robot import Robot, policy_for

from sequence_ai import CertPinError, InvalidRequest, SequencesError, Unavailable

# Expected, documented warnings of the paths these cells drive on purpose.
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings(
    "ignore:model is warming", "ignore:the worker changed mid-episode", "ignore:worker echoed")]

HZ = 60.0
ACTIONS = 24  # three chunks of eight rows
MID = 5  # mid-run faults are armed after this many actions (the second request is not sent yet)
RECOVERS = "recovers"


@dataclass(frozen=True)
class Fault:
    """One row of the matrix: how to provoke it, when, and what every level must do."""

    name: str
    when: str  # "before" the first request, or "mid" run (after MID actions; ROS cells: after the first chunk)
    arm: Callable[[object], None]
    expect: object  # RECOVERS or the exception class the run must end with
    underruns: bool = False  # the fault cannot be hidden: the run must count a stall
    ros_when: Optional[str] = None
    ros_arm: Optional[Callable[[object], None]] = None
    evidence: Optional[Callable[[object, Observed], bool]] = None  # the fault really happened
    says: str = ""  # error cells: a fragment the error's message must contain
    timeout_s: float = 30.0  # connect(timeout_s=...) of the client cells


def _statuses(platform) -> List[int]:
    return [r["status"] for r in platform.requests(limit=500)]


def _connects(platform) -> int:
    return sum(platform.stats().get("gateway", {}).get("POST /v1/act/connect", {}).values())


def _worker_blip(platform) -> None:
    platform.fault("worker_down")
    threading.Timer(0.5, lambda: platform.fault("worker_up")).start()


class _RestartWithWrongPin:
    """The worker restarts and the next admission hands out another certificate's pin."""

    restarted_at = 0.0  # wall clock, as the worker's request log

    def __call__(self, platform) -> None:
        platform.fault("bad_fingerprint", count=1)  # the next admission hands out another certificate's pin
        platform.fault("restart_worker")  # ... and the worker the link had verified is gone
        self.restarted_at = time.time()


_restart_with_wrong_pin = _RestartWithWrongPin()


class _WorkerRestart:
    """Both shapes of a worker restart: the same address with a new certificate (the local
    platform's default, which 0.20.0 fails with CertPinError), or a new address."""

    def __init__(self, same_port: bool):
        self.same_port = same_port
        self.connects_before = 0

    def arm(self, platform) -> None:
        before = platform.worker()
        self.connects_before = _connects(platform)
        platform.fault("restart_worker", same_port=self.same_port)
        after = platform.worker()
        assert after["cert_fingerprint"] != before["cert_fingerprint"], "a restarted worker has a new certificate"
        moved = f"{before['worker_url']} -> {after['worker_url']}"
        assert (after["worker_url"] == before["worker_url"]) == self.same_port, f"same_port={self.same_port}: {moved}"

    def readmitted(self, platform, seen) -> bool:
        """The run went back through the gateway after the restart (for the new pin or address)."""
        return _connects(platform) > self.connects_before


_SAME_ADDRESS, _NEW_ADDRESS = _WorkerRestart(same_port=True), _WorkerRestart(same_port=False)


def _short_leases_and_reconnect(platform) -> None:
    platform.fault("lease_ttl", ttl_s=1.0)
    platform.fault("rotate_secret")  # a connected node re-admits now and gets the short lease


FAULTS = [
    Fault("warming_at_connect", "before", lambda p: p.fault("warming", seconds=1.0, eta_s=1), RECOVERS,
          evidence=lambda p, seen: seen.warmed > 0),
    Fault("warming_mid_run", "mid", lambda p: p.fault("warming", seconds=30, eta_s=30), Unavailable),
    Fault("secret_rotated_401", "mid", lambda p: p.fault("rotate_secret"), RECOVERS,
          evidence=lambda p, seen: 401 in _statuses(p)),
    Fault("lease_expiry", "before", lambda p: p.fault("lease_ttl", ttl_s=1.0), RECOVERS,
          ros_arm=_short_leases_and_reconnect, evidence=lambda p, seen: _connects(p) >= 2),
    Fault("worker_restart_new_cert", "mid", _SAME_ADDRESS.arm, RECOVERS, evidence=_SAME_ADDRESS.readmitted),
    Fault("worker_restart_new_address", "mid", _NEW_ADDRESS.arm, RECOVERS, evidence=_NEW_ADDRESS.readmitted),
    Fault("wrong_fingerprint", "mid", _restart_with_wrong_pin, CertPinError),
    Fault("dropped_mid_body", "mid", lambda p: p.fault("drop", count=1), RECOVERS,
          evidence=lambda p, seen: len(_statuses(p)) >= 4),  # three chunks and one replay
    Fault("busy_429_burst", "mid", lambda p: p.fault("busy", count=3), RECOVERS,
          evidence=lambda p, seen: _statuses(p).count(429) == 3),
    Fault("status_413", "mid", lambda p: p.fault("status", code=413, count=1), InvalidRequest),
    Fault("status_500", "mid", lambda p: p.fault("status", code=500, count=1), SequencesError),
    Fault("malformed_json", "mid", lambda p: p.fault("malformed_json", count=1), SequencesError),
    Fault("nan_actions", "mid", lambda p: p.fault("nan_actions", count=1), SequencesError),
    Fault("inf_actions", "mid", lambda p: p.fault("inf_actions", count=1), SequencesError),
    Fault("wrong_action_dim", "mid", lambda p: p.fault("wrong_action_dim", count=1), SequencesError),
    Fault("latency_spike", "mid", lambda p: p.fault("latency", ms=1200, count=1), RECOVERS, underruns=True),
    Fault("gateway_down", "before", lambda p: p.kill(), Unavailable),
    Fault("worker_down", "mid", _worker_blip, RECOVERS, evidence=lambda p, seen: _connects(p) >= 2),
]
BY_NAME = {f.name: f for f in FAULTS}
CLIENT_LEVELS = ("run", "act", "next_action")


@dataclass
class Observed:
    """What one cell saw, whatever the level."""

    reason: str = ""
    error: Optional[BaseException] = None
    holds: int = 0
    actions: List[List[float]] = field(default_factory=list)
    underruns: int = 0
    warmed: int = 0  # warming reports seen before the first action


def _finite(rows) -> bool:
    return all(len(row) == 8 and all(math.isfinite(v) for v in row) for row in rows)


# -- the client levels ---------------------------------------------------------------------------


def _drive_client(platform, fault: Fault, level: str) -> Observed:
    robot = Robot()
    seen = Observed()
    armed = threading.Event()

    def maybe_arm() -> None:
        if fault.when == "mid" and len(robot.actions) == MID and not armed.is_set():
            armed.set()
            fault.arm(platform)

    def act(action: List[float]) -> None:
        robot.act(action)
        maybe_arm()

    if fault.when == "before":
        fault.arm(platform)
    def on_warming(waited_s: float, eta_s: float) -> None:
        seen.warmed += 1

    policy = policy_for(platform, control_hz=HZ, on_warming=on_warming, timeout_s=fault.timeout_s)
    loop = dict(observe=robot.observe, act=act, validate=robot.validate, hold=robot.hold,
                on_underrun=robot.on_underrun, progress=False)
    try:
        with policy:
            if level == "run":
                out = policy.run(**loop, max_actions=ACTIONS)
            elif level == "act":
                out = policy.act("pick up the cup", **loop, max_seconds=20.0, max_actions=ACTIONS)
            else:
                for _ in range(ACTIONS):
                    act(policy.next_action(robot.observe()))
                out = None
            seen.reason = out.reason if out is not None else "completed"
    except SequencesError as error:
        seen.error = error
        if level == "next_action":  # no run, so no outcome: the exception is the answer
            seen.reason = f"raised:{type(error).__name__}"
        else:  # a run that raised still leaves its outcome
            last = policy.last_outcome
            seen.reason = last.reason if last is not None else "no outcome"
    seen.holds, seen.actions, seen.underruns = robot.holds, robot.actions, len(robot.underruns)
    return seen


def _check_client(platform, fault: Fault, level: str, seen: Observed) -> None:
    assert _finite(seen.actions), "an invalid action was acted"
    if fault.expect == RECOVERS:
        assert seen.error is None, f"expected transparent recovery, got {seen.error!r}"
        assert seen.reason == "completed" and len(seen.actions) == ACTIONS
        assert seen.holds == 0, "a completed run does not hold"
        if fault.underruns and level != "next_action":
            assert seen.underruns >= 1, "a stall longer than the open-loop window must be counted"
        assert fault.evidence is None or fault.evidence(platform, seen), "the fault never happened"
        return
    error = seen.error
    assert error is not None, f"expected {fault.expect.__name__}, the run ended {seen.reason}"
    assert type(error) is fault.expect, f"expected {fault.expect.__name__}, got {error!r}"
    assert error.message, "the error must say what happened"
    assert fault.says in error.message, f"the error does not say {fault.says!r}: {error.message}"
    assert seen.reason == f"raised:{fault.expect.__name__}"
    if level != "next_action":  # next_action has no hold of its own: the caller holds
        assert seen.holds == 1, f"hold fired {seen.holds} times"
    if fault.expect is Unavailable and fault.name == "warming_mid_run":
        assert error.warming
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    assert platform.api_key not in text
    assert getattr(platform, "direct_secret", platform.api_key) not in text


CLIENT_CELLS = [(f.name, level) for level in CLIENT_LEVELS for f in FAULTS]


@pytest.mark.parametrize("fault,level", CLIENT_CELLS, ids=[f"{f}-{lv}" for f, lv in CLIENT_CELLS])
def test_client_level_meets_the_documented_behaviour(platform, fault, level):
    spec = BY_NAME[fault]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            seen = _drive_client(platform, spec, level)
    finally:
        if not platform.running:
            platform.restart()
    _check_client(platform, spec, level, seen)
    if fault == "wrong_fingerprint":  # (the requests before the restart were the old worker's)
        after_restart = [r for r in platform.requests() if r["time"] >= _restart_with_wrong_pin.restarted_at]
        assert after_restart == [], "no /act may reach a worker whose certificate did not match"


# -- the ROS node --------------------------------------------------------------------------------

# 4 s at 15 Hz: a "mid" fault is armed once the worker answered the goal's first chunk (by its
# log, read over the admin API); on a loaded machine that read can lag a second or more, and a
# shorter goal (20 actions: 1.3 s) was seen to have sent its last request by then.
ROS_ACTIONS = 60


@pytest.fixture(scope="module")
def ros_arm(local_platform, tmp_path_factory):
    """One node, its arm double and a planner, shared by every ROS cell of the module."""
    pytest.importorskip("rclpy", reason="rclpy not importable: run through scripts/workspace.sh")
    from ros_harness import PolicyNodeFactory, RosHarness, start_arm

    harness = RosHarness()
    factory = PolicyNodeFactory(tmp_path_factory.mktemp("fault_matrix"))
    try:
        local_platform.reset()
        yield harness, factory, start_arm(harness, factory, local_platform)
    finally:
        factory.stop_all()
        harness.close()


def _goal(node, planner, arm, fault: Fault, platform, arm_fault: Callable[[object], None]) -> Observed:
    from _ros_goals import GoalRun
    from eventually import wait_until

    outcomes_before = len(planner.outcomes)
    when = fault.ros_when or fault.when
    if when == "before":
        arm_fault(platform)
    sent, sent_wall = time.monotonic(), time.time()
    goal = GoalRun(node, planner, "pick up the cup", max_seconds=15.0, max_actions=ROS_ACTIONS)
    if when == "mid":
        # Armed once the worker has answered the goal's first chunk, by the worker's own log:
        # counting commands as they reach this process would arm late (or after the goal) when
        # its DDS delivery stalls, and the fault would never happen.
        assert wait_until(lambda: any(r["time"] >= sent_wall and r["status"] is not None
                                    for r in platform.requests(limit=20)), 15.0), "the goal sent no request"
        arm_fault(platform)
    response = goal.wait(40.0)
    result = response.result
    assert wait_until(lambda: len(planner.outcomes) > outcomes_before, 3.0), "no RunOutcome was published"
    # The hold is published before the result; wait for every command the outcome counts.
    commands = [v for _, v in arm.settled_commands(result.outcome.actions + 1, since=sent)]
    seen = Observed(reason=result.outcome.reason, holds=int(result.outcome.held), actions=commands,
                    underruns=int(result.outcome.underruns))
    seen.error = response  # the goal's response stands in for the error at this level
    assert planner.outcomes[-1].reason == result.outcome.reason
    return seen


def _check_ros(platform, fault: Fault, seen: Observed) -> None:
    from sequence_ai_ros.action import Act

    response = seen.error
    result = response.result
    assert _finite(seen.actions), "an invalid command was published"
    assert result.outcome.held, "every ending of a goal holds"
    assert len(seen.actions) == result.outcome.actions + 1, \
        f"{len(seen.actions)} commands for {result.outcome.actions} actions: the hold must be exactly one"
    if fault.expect == RECOVERS:
        assert response.status == 4 and result.status == Act.Result.STATUS_COMPLETED, \
            f"expected recovery, got {result.outcome.reason}: {result.message}"
        assert result.outcome.actions == ROS_ACTIONS
        if fault.underruns:
            assert result.outcome.underruns >= 1
        assert fault.evidence is None or fault.evidence(platform, seen), "the fault never happened"
        return
    assert response.status == 6 and result.status == Act.Result.STATUS_POLICY_ERROR
    assert result.outcome.reason == f"raised:{fault.expect.__name__}", result.message
    assert result.message and result.outcome.message


ROS_CELLS = [(f.name, "ros") for f in FAULTS]


@pytest.mark.ros
@pytest.mark.parametrize("fault,level", ROS_CELLS, ids=[f"{f}-{lv}" for f, lv in ROS_CELLS])
def test_ros_node_meets_the_documented_behaviour(ros_arm, platform, fault, level):
    from eventually import wait_until
    from ros_harness import ArmDouble, Planner

    harness, factory, (process, arm, planner) = ros_arm
    spec = BY_NAME[fault]
    try:
        if fault == "warming_at_connect":
            # The node waits out a cold worker at startup (publishing ~/warming), then serves. The
            # cold start lasts until the node has reported it, then 1 s more: one timed from when
            # it was armed could be over before a slow-starting node (a loaded machine) first asked.
            platform.fault("warming", seconds=600.0, eta_s=3)
            cold, ns = factory(platform)
            cold_arm, cold_planner = ArmDouble(harness.node, ns), Planner(harness.node, ns)
            assert wait_until(lambda: any(w.warming for w in cold_planner.warming) or not cold.running, 60.0), \
                cold.output()[-2000:]
            platform.fault("warming", seconds=1.0, eta_s=1)
            assert wait_until(lambda: (cold_planner.ready() and cold_planner.inputs_fresh) or not cold.running, 30.0), \
                cold.output()[-2000:]
            assert any(w.warming and not w.ready for w in cold_planner.warming), "no warming status before ready"
            seen = _goal(harness.node, cold_planner, cold_arm, spec, platform, lambda p: None)
            seen.warmed = sum(w.warming for w in cold_planner.warming)
            cold.stop()
        else:
            seen = _goal(harness.node, planner, arm, spec, platform, spec.ros_arm or spec.arm)
    finally:
        if not platform.running:
            platform.restart()
    _check_ros(platform, spec, seen)
    assert process.running, process.output()[-2000:]


# -- a hostile upstream: the same levels against a gateway and a worker that misbehave on purpose --
#
# A real plain-HTTP gateway and a real pinned TLS worker on loopback (`_hostile.py`), each answer
# scripted: numbers that contradict the model, answers trickled or without end, error pages that
# echo the request. Armed before the run; `after=1` meets the run's second request.

NARROW = {"robot": "droid_franka", "action_space": "joint_delta", "action_dim": 7, "control_frequency_hz": 15.0}


def _narrow(up) -> None:
    up.grant["action"] = NARROW  # the connect answer agrees with the 7-wide rows; the catalogue says 8
    up.worker.on("/act", send(chunk_answer(width=7)))


HOSTILE = [
    Fault("chunk_claims_1000hz", "before", expect=SequencesError, says="1000 Hz",
          arm=lambda up: up.worker.on("/act", send(chunk_answer(control_frequency_hz=1000.0)), after=1)),
    Fault("contract_7_wide_for_8", "before", expect=SequencesError, says="7-wide", arm=_narrow),
    Fault("values_1e308", "before", expect=SequencesError, says="out of range",
          arm=lambda up: up.worker.on("/act", send(chunk_answer(value=1e308)), after=1)),
    Fault("trickling_worker", "before", expect=Unavailable, says="did not answer within", timeout_s=1.0,
          arm=lambda up: up.worker.on("/act", trickle(chunk_answer()), after=1)),
    Fault("endless_chunk_size_line", "before", expect=SequencesError, says="refused the worker's answer",
          arm=lambda up: up.worker.on("/act", endless(CHUNKED_HEAD, b"f"), after=1)),
    Fault("connect_answer_400mib", "before", expect=SequencesError, says="refused the gateway's answer",
          arm=lambda up: up.gateway.on("/v1/act/connect", endless(
              b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (400 << 20), b"\0"))),
    Fault("worker_echoes_the_secret", "before", expect=SequencesError, says="[redacted]",
          arm=lambda up: up.worker.on("/act", echo(), after=1)),
    Fault("gateway_echoes_the_key", "before", expect=SequencesError, says="[redacted]",
          arm=lambda up: up.gateway.on("/v1/act/connect", echo())),
]
for _fault in HOSTILE:
    BY_NAME[_fault.name] = _fault
HOSTILE_CELLS = [(f.name, level) for level in CLIENT_LEVELS for f in HOSTILE]


@pytest.mark.parametrize("fault,level", HOSTILE_CELLS, ids=[f"{f}-{lv}" for f, lv in HOSTILE_CELLS])
def test_client_level_meets_the_documented_behaviour_against_a_hostile_upstream(tmp_path, fault, level):
    spec = BY_NAME[fault]
    with HostileUpstream(tmp_path) as up, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        seen = _drive_client(up, spec, level)
    _check_client(up, spec, level, seen)


@pytest.fixture(scope="module")
def hostile_arm(ros_arm, tmp_path_factory):
    """A node of its own (request timeout 2 s) on a hostile upstream, beside the module's node."""
    from ros_harness import start_arm

    harness, factory, _ = ros_arm
    with HostileUpstream(tmp_path_factory.mktemp("hostile")) as up:
        process, arm, planner = start_arm(harness, factory, up, request_timeout_s=2.0)
        yield up, harness, process, arm, planner
        process.stop()


def _restore(up) -> None:
    up.grant["action"] = dict(up.declared)
    for server in (up.gateway, up.worker):
        server.reset()


HOSTILE_ROS = ["chunk_claims_1000hz", "values_1e308", "trickling_worker", "endless_chunk_size_line",
               "worker_echoes_the_secret"]
HOSTILE_ROS_CELLS = [(name, "ros") for name in HOSTILE_ROS]


@pytest.mark.ros
@pytest.mark.parametrize("fault,level", HOSTILE_ROS_CELLS, ids=[f"{f}-{lv}" for f, lv in HOSTILE_ROS_CELLS])
def test_ros_node_meets_the_documented_behaviour_against_a_hostile_upstream(hostile_arm, fault, level):
    up, harness, process, arm, planner = hostile_arm
    spec = BY_NAME[fault]
    try:
        seen = _goal(harness.node, planner, arm, spec, up, spec.arm)
    finally:
        _restore(up)
    _check_ros(up, spec, seen)
    result = seen.error.result
    text = result.message + result.outcome.message + process.output()
    assert spec.says in result.message, result.message
    assert up.api_key not in text and up.direct_secret not in text
    assert process.running, process.output()[-2000:]


@pytest.mark.ros
def test_a_goal_on_a_trickling_worker_ends_held_and_reported_and_the_next_goal_runs(hostile_arm):
    """The node-level symptom of a trickling worker: a 3 s goal had no result after 40 s (the run
    blocked in /act/episode_end, whose timeout was per read) and the next goal was refused."""
    from _ros_goals import GoalRun
    from eventually import wait_until

    up, harness, process, arm, planner = hostile_arm
    outcomes = len(planner.outcomes)
    up.worker.on("/act", trickle(chunk_answer()))
    up.worker.on("/act/episode_end", trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 900\r\n\r\n" + b" " * 900, 0.1))
    try:
        started = time.monotonic()
        response = GoalRun(harness.node, planner, "pick up the cup", max_seconds=3.0).wait(20.0)
        took = time.monotonic() - started
    finally:
        _restore(up)
    result = response.result
    assert took < 20.0 and result.outcome.held, f"{result.outcome.reason} after {took:.1f} s"
    assert result.outcome.reason in ("raised:Unavailable", "timeout"), result.message
    assert wait_until(lambda: len(planner.outcomes) > outcomes, 3.0), "no RunOutcome was published"
    assert up.worker.count("/act/episode_end") >= 1
    following = GoalRun(harness.node, planner, "pick up the cup", max_seconds=15.0, max_actions=8).wait(30.0)
    assert following.result.outcome.reason == "completed", following.result.message


@pytest.mark.ros
def test_sigint_stops_a_node_whose_goal_waits_on_a_trickling_worker(hostile_arm):
    """Last in the module: it stops the hostile node."""
    import signal

    from _ros_goals import GoalRun
    from eventually import wait_until

    up, harness, process, arm, planner = hostile_arm
    up.worker.on("/act", trickle(chunk_answer()))
    up.worker.on("/act/episode_end", trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 900\r\n\r\n" + b" " * 900, 0.1))
    before = up.worker.count("/act")
    GoalRun(harness.node, planner, "pick up the cup", max_seconds=30.0)
    assert wait_until(lambda: up.worker.count("/act") > before, 15.0), "the goal sent no request"
    process.process.send_signal(signal.SIGINT)
    started = time.monotonic()
    assert wait_until(lambda: not process.running, 15.0), "SIGINT did not stop the node within 15 s"
    assert process.process.returncode == 0, process.output()[-2000:]
    assert time.monotonic() - started < 15.0
