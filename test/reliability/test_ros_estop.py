"""The e-stop, per publisher, against the node process over real topics, each e-stop publisher a
process of its own (`estop_pendant.py`): a pendant and a dashboard, as on a robot.

* One publisher pressing keeps every goal refused whatever another publishes (a dashboard's
  latched `false` used to release it: last message won), on a running node and on one started
  while both were there.
* A pressing pendant that is SIGKILLed leaves a *lost press*: the node stays engaged, diagnostics
  say the pendant went away while pressing, another publisher's `false` does not release it, and
  only `~/release_estop` does, and only once no live publisher presses.
* A node starts engaged (`estop_start_engaged`, the default) until `~/release_estop`: it cannot
  know what it missed while it was down.
* Beside a dashboard publishing latched `false` at 1 kHz, a pendant's press stops a running goal
  (its hold published) within two control periods, every one of PRESSES presses, judged by the
  pendant's stamp of its press and the node's stamp of its hold (both the machine's wall clock:
  DDS source stamps). A truncated message presses; the release is refused while a listed
  publisher has sent nothing yet (its latched press may be on its way).

The pendants announce a 2 s DDS lease (Fast DDS's default is 20 s), so the node sees a killed one
go within seconds.
"""

from __future__ import annotations

import math
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator, List, Optional

import pytest

pytest.importorskip("rclpy", reason="rclpy not importable: run through scripts/workspace.sh")

from eventually import wait_until
from ros_harness import ArmDouble, Planner
from sequence_ai_ros.action import Act
from std_srvs.srv import Trigger

from sequence_ai_ros.tools.processes import ros_environment

pytestmark = [pytest.mark.ros, pytest.mark.slow]

PENDANT = Path(__file__).resolve().parents[1] / "ros" / "estop_pendant.py"
SHORT_LEASE = """<?xml version="1.0" encoding="UTF-8" ?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <transport_descriptors>
    <transport_descriptor><transport_id>shm</transport_id><type>SHM</type></transport_descriptor>
    <transport_descriptor>
      <transport_id>udp_loopback</transport_id><type>UDPv4</type>
      <interfaceWhiteList><address>127.0.0.1</address></interfaceWhiteList>
    </transport_descriptor>
  </transport_descriptors>
  <participant profile_name="estop_pendant" is_default_profile="true">
    <rtps>
      <userTransports><transport_id>shm</transport_id><transport_id>udp_loopback</transport_id></userTransports>
      <useBuiltinTransports>false</useBuiltinTransports>
      <builtin><discovery_config>
        <leaseDuration><sec>2</sec></leaseDuration>
        <leaseAnnouncement><sec>0</sec><nanosec>500000000</nanosec></leaseAnnouncement>
      </discovery_config></builtin>
    </rtps>
  </participant>
</profiles>
"""


def _word(value) -> str:
    """A pendant's word for `value`: True/False, None (publish nothing), or as given ("truncated")."""
    return "none" if value is None else str(value).lower()


class Pendant:
    """An e-stop publisher in its own process: `say(True)` publishes and returns the pendant's wall
    clock (s) just before it did, once it has. `first` may be "flood:HZ" (estop_pendant.py)."""

    def __init__(self, topic: str, first, profile: Path):
        env = ros_environment({"FASTRTPS_DEFAULT_PROFILES_FILE": str(profile)})
        self.process = subprocess.Popen([sys.executable, str(PENDANT), topic, _word(first)], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        if str(first).startswith("flood:"):
            line = self.process.stdout.readline().strip()
            assert line == "flooding", f"flood said {line!r}"
        else:
            self._expect(first)

    def say(self, value) -> float:
        self.process.stdin.write(f"{_word(value)}\n")
        self.process.stdin.flush()
        return self._expect(value)

    def _expect(self, value) -> float:
        line = self.process.stdout.readline().strip()  # the pendant prints after each publish
        word, _, stamp = line.rpartition(" ")
        assert word == f"published {_word(value)}", f"pendant said {line!r}"
        return int(stamp) * 1e-9

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10.0)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()  # it exits at the end of its input
            try:
                self.process.wait(10.0)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def pendants(tmp_path) -> Iterator[List[Pendant]]:
    profile = tmp_path / "short_lease.xml"
    profile.write_text(SHORT_LEASE)
    started: List[Pendant] = []

    def start(topic: str, first: bool) -> Pendant:
        started.append(Pendant(topic, first, profile))
        return started[-1]

    yield start
    for pendant in started:
        pendant.stop()


def _estop_status(ros, ns: str):
    """The node's latest e-stop DiagnosticStatus, kept up to date from /diagnostics."""
    from diagnostic_msgs.msg import DiagnosticArray

    latest = {}
    name = f"{ns}/sequence_ai_policy: e-stop"

    def on_diagnostics(message) -> None:
        for status in message.status:
            if status.name == name:
                latest["status"] = status
    ros.node.create_subscription(DiagnosticArray, "/diagnostics", on_diagnostics, 10)
    return lambda: latest.get("status")


def _start_node(ros, policy_node, platform, ns: str, arm=None, planner=None, **parameters):
    """The node (estop_topic `estop`) and, unless given, an arm double and a planner; waited on
    until it is ready with fresh inputs. Its policy-loop status may be ERROR for the e-stop."""
    process, _ = policy_node(platform, ns=ns, estop_topic="estop", **parameters)
    arm = arm or ArmDouble(ros.node, ns)
    if planner is None:
        planner = Planner(ros.node, ns)
    planner.forget()
    planner.warming.clear()  # a node started before in this namespace was ready; this one is not yet

    def ready() -> bool:
        status = planner.diagnostics
        ages = [kv.value for kv in status.values if kv.key.startswith("age_s ")] if status else []
        fresh = bool(ages) and all(age != "never" and float(age) < 2.0 for age in ages)
        return planner.ready() and fresh
    assert wait_until(lambda: ready() or not process.running, 30.0), "never ready:\n" + process.output()[-2000:]
    assert process.running, process.output()[-2000:]
    return process, arm, planner


def _values(status) -> dict:
    return {kv.key: kv.value for kv in status.values}


def _publishers(status) -> dict:
    return {k: v for k, v in _values(status).items() if k.startswith("publisher ")} if status else {}


def _all_heard(status) -> bool:
    """Every publisher the node lists has been heard (none `silent`)."""
    return status is not None and "silent" not in _publishers(status).values()


def _release(planner: Planner, ns: str):
    client = planner.node.create_client(Trigger, f"{ns}/sequence_ai_policy/release_estop")
    return planner.call(client, Trigger.Request(), timeout_s=10.0)


def _moves(planner: Planner) -> None:
    """A short goal is accepted and runs to its end."""
    result = Planner.result(planner.send("pick up the red cube", max_seconds=1.0)).result
    assert result.status == Act.Result.STATUS_TIMEOUT and result.outcome.actions > 0, result.message


def test_one_publisher_pressing_holds_the_estop_whatever_another_publishes_until_its_own_false(
        ros, policy_node, platform, pendants):
    ns = "/estop_arm1"
    # A pendant presses, then a dashboard publishes a latched false; then the node starts.
    pendant = pendants(f"{ns}/estop", True)
    dashboard = pendants(f"{ns}/estop", False)
    process, arm, planner = _start_node(ros, policy_node, platform, ns,
                                        estop_start_engaged=False)  # this test is about the publishers alone
    status = _estop_status(ros, ns)
    refused = planner.rejected("pick up the red cube", max_seconds=2.0)
    assert "e-stop engaged" in refused and "presses it" in refused and "estop_pendant_true" in refused, refused

    dashboard.say(False)  # on the running node too: another publisher's false releases nothing
    assert "presses it" in planner.rejected("pick up the red cube", max_seconds=2.0)
    assert wait_until(lambda: status() is not None and status().level == b"\x02", 10.0), status()
    sources = {k: v for k, v in _values(status()).items() if k.startswith("publisher ")}
    assert sorted(sources.values()) == ["pressing", "released"], sources
    answer = _release(planner, ns)
    assert not answer.success and "presses it" in answer.message, answer.message  # a live press is its own

    pendant.say(False)  # its own false releases its own press
    assert wait_until(lambda: status().level == b"\x00", 10.0), status()
    _moves(planner)
    assert arm.command_log(), "the goal moved the arm"

    # A publisher that can never be heard (not latched: `ros2 topic pub` without QoS flags) holds
    # the e-stop while it is there: its value is unknown.
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Bool

    volatile = ros.node.create_publisher(Bool, f"{ns}/estop", QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE))
    assert wait_until(lambda: "cannot connect" in status().message, 10.0), status()
    assert "cannot connect" in planner.rejected("pick up the red cube", max_seconds=2.0)
    ros.node.destroy_publisher(volatile)
    assert wait_until(lambda: status().level == b"\x00", 10.0), status()


def test_a_killed_pressing_pendant_keeps_the_estop_engaged_until_released_a_restarted_node_starts_engaged_and_a_flood_delays_no_press(
        ros, policy_node, platform, pendants):
    ns = "/estop_arm2"
    process, arm, planner = _start_node(ros, policy_node, platform, ns)
    status = _estop_status(ros, ns)
    # Started engaged: nothing has released it since the node started.
    assert "not released since the node started" in planner.rejected("pick up the red cube", max_seconds=2.0)
    answer = _release(planner, ns)
    assert answer.success and "the start latch" in answer.message, answer.message
    _moves(planner)

    pendant = pendants(f"{ns}/estop", True)
    assert wait_until(lambda: status() is not None and "presses it" in status().message, 10.0), status()
    pendant.kill()
    # The running node stays engaged, and says the pendant went away while pressing.
    went = wait_until(lambda: status() is not None and "went away while pressing" in status().message, 30.0)
    assert went, status()
    assert any("gone while pressing" in v for v in _values(status()).values()), _values(status())
    assert "went away while pressing" in planner.rejected("pick up the red cube", max_seconds=2.0)
    assert wait_until(lambda: "went away while pressing" in process.output(), 5.0), "the node did not log it"

    dashboard = pendants(f"{ns}/estop", False)  # a live publisher's false releases no lost press
    dashboard.say(False)
    assert "went away while pressing" in planner.rejected("pick up the red cube", max_seconds=2.0)
    assert wait_until(lambda: _all_heard(status()) and len(_publishers(status())) == 2, 10.0), status()
    answer = _release(planner, ns)
    assert answer.success and "lost press" in answer.message, answer.message
    _moves(planner)

    # A node restarted now (the dashboard's latched false still there) starts engaged; the same node
    # then holds against an unheard publisher, a truncated message and a flood (one node for both).
    process.stop()
    process, _, _ = _start_node(ros, policy_node, platform, ns, arm=arm, planner=planner, diagnostics_period_s=0.2)
    assert "not released since the node started" in planner.rejected("pick up the red cube", max_seconds=2.0)
    assert wait_until(lambda: "not released since" in status().message and _all_heard(status()), 10.0), status()
    _unheard_truncated_and_flooding_publishers(process, arm, planner, status, pendants, ns)


PRESSES = 20
PERIOD_S = 1 / 15  # the control period of the platform's default model (pi05-droid, 15 Hz)
FLOOD_HZ = 1000


def _unheard_truncated_and_flooding_publishers(process, arm, planner, status, pendants, ns: str) -> None:
    """On a node not released since it started: the release refused while a listed publisher has
    sent nothing; a truncated message presses; PRESSES presses beside a FLOOD_HZ flood of false,
    each held within two periods."""
    topic = f"{ns}/estop"
    others = len(_publishers(status()))

    # A publisher listed but not heard yet: its latched value may be a press on its way, so the
    # release is refused (it released a lost press 1 s before a new publisher's latched true arrived).
    quiet = pendants(topic, None)
    assert wait_until(lambda: "silent" in _publishers(status()).values(), 10.0), status()
    answer = _release(planner, ns)
    assert not answer.success and "has sent nothing since it appeared" in answer.message, answer.message
    assert "not released since the node started" in planner.rejected("pick up the red cube", max_seconds=2.0)
    quiet.say(True)  # its press arrives
    assert wait_until(lambda: "presses it" in status().message, 10.0), status()
    assert not _release(planner, ns).success
    quiet.say(False)
    assert wait_until(lambda: _all_heard(status()) and "presses it" not in status().message, 10.0), status()
    answer = _release(planner, ns)
    assert answer.success and "the start latch" in answer.message, answer.message

    # A message that cannot be decoded presses, for its publisher, logged once.
    garbled = pendants(topic, "truncated")
    assert wait_until(lambda: "presses it" in status().message, 10.0), status()
    assert "pressing (a message that could not be decoded)" in _publishers(status()).values(), _publishers(status())
    assert "presses it" in planner.rejected("pick up the red cube", max_seconds=2.0)
    garbled.say("truncated")
    garbled.say(False)  # its own false releases its own press
    assert wait_until(lambda: status().level == b"\x00", 10.0), status()
    assert len([line for line in process.output().splitlines() if "could not be decoded" in line]) == 1, \
        process.output()[-3000:]

    # A dashboard floods latched false at 1 kHz; a pendant presses during running goals.
    pendants(topic, f"flood:{FLOOD_HZ}")
    pendant = pendants(topic, False)
    assert wait_until(lambda: any("flooding" in v for v in _publishers(status()).values()), 10.0), status()
    assert wait_until(lambda: _all_heard(status()) and len(_publishers(status())) == others + 4, 10.0), status()
    assert status().level == b"\x01" and "floods it at" in status().message, status()  # WARN, naming its rate
    late = []
    for _ in range(PRESSES):
        arm.forget()
        sent = _accepted(planner)
        assert wait_until(lambda: len(arm.sent_at) >= 2, 10.0), "the goal never moved the arm"
        pressed_s = pendant.say(True)
        result = Planner.result(sent).result
        assert result.status == Act.Result.STATUS_ESTOP, result.message
        assert wait_until(lambda result=result: len(arm.sent_at) >= result.outcome.actions + 1, 10.0)
        late.append(max(arm.sent_at) - pressed_s)  # the hold, by the node's stamp, after the press
        pendant.say(False)
    p99 = sorted(late)[math.ceil(0.99 * len(late)) - 1]
    assert p99 < 2 * PERIOD_S, f"press to hold beside a {FLOOD_HZ} Hz flood, s, in order: {[round(x, 4) for x in late]}"
    assert all(x > 0 for x in late), late
    assert any("flooding" in v for v in _publishers(status()).values()), "the flood went on throughout"


def _accepted(planner: Planner, timeout_s: float = 10.0):
    """A goal the node accepts, sent again while it still refuses (the e-stop's release, a
    pendant's false, may not have reached it yet); each refusal is answered at once."""
    sent: List[Optional[object]] = [None]

    def send() -> bool:
        sent[0] = planner._send("pick up the red cube", 30.0, 0, None)
        return sent[0].handle.accepted
    assert wait_until(send, timeout_s, poll_s=0.02), f"goals refused: {planner.refusals[-1:]}"
    return sent[0]
