"""Helpers of the ROS suites: the node under test in its own process, and a test-side arm.

`ArmDouble` plays the robot from inside the test process over real topics: it publishes joint
states and camera images (so a test can make one go stale), follows position commands like a
controller would, and records every command with its arrival time. `planner` is an rclpy node
with the action client and the service clients a planner would use.
"""

from __future__ import annotations

import itertools
import math
import re
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from eventually import wait_until
from rclpy.action import ActionClient
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import Image, JointState
from sequence_ai_ros.action import Act
from sequence_ai_ros.msg import RunOutcome, WarmingStatus
from sequence_ai_ros.srv import SetInstruction
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory
from unique_identifier_msgs.msg import UUID

from sequence_ai_ros.spinning import Spinning
from sequence_ai_ros.tools.processes import NodeProcess

HOME = [0.0, -0.5, 0.0, -2.2, 0.0, 1.8, 0.8]
JOINTS = [f"fr3_joint{i}" for i in range(1, 8)]
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
_namespaces = itertools.count(1)
# A node's console line: rcutils' default format, "[SEVERITY] [seconds since the epoch] [name]: text".
_LOG_LINE = re.compile(r"^\[[A-Z]+\] \[(\d+\.\d+)\] \[[^\]]*\]: (.*)$", re.M)


def log_stamps(process: NodeProcess, text: str) -> List[float]:
    """When the node logged each line containing `text`, by the stamp rcutils puts on it: the node's
    wall clock as it took the line, the clock of the DDS source stamps of its commands (`sent_at`)."""
    return [float(stamp) for stamp, line in _LOG_LINE.findall(process.output()) if text in line]


def logged_at(process: NodeProcess, text: str, before: int, timeout_s: float = 5.0) -> float:
    """The stamp of the first line containing `text` after the `before` there were already (a node
    shared by a module logs the same line for every test), waited for."""
    assert wait_until(lambda: len(log_stamps(process, text)) > before, timeout_s), \
        f"the node never logged {text!r}:\n{process.output()[-2000:]}"
    return log_stamps(process, text)[before]



class ArmDouble:
    """The robot side, in the test process, under namespace `ns`."""

    # 448×252 (16:9, 339 KB): under Fast DDS's 512 KB shared-memory segment. Larger raw frames
    # travel as UDP fragments, and with best-effort sensor QoS one lost fragment loses the frame.
    def __init__(self, node, ns: str, views=("exterior_1", "wrist_left"), size=(448, 252),
                 command_type: str = "float64_multi_array"):
        self.node = node
        self.ns = ns
        self.q = np.array(HOME)
        self.gripper = 0.04
        self.commands: List[Tuple[float, List[float]]] = []
        # When the node published each Float64MultiArray command (DDS source timestamp, wall
        # clock): spacing at the node, whatever delays this process adds on arrival.
        self.sent_at: List[float] = []
        self._lock = threading.Lock()
        self.silent_views: set = set()
        self.joint_states_on = True
        width, height = size
        frame = np.zeros((height, width, 3), dtype=np.uint8)
        frame[:, :] = (180, 190, 200)
        frame[height // 2:, :] = (110, 90, 70)
        frame[height // 3: height // 2, width // 2: width // 2 + 60] = (220, 20, 20)
        self._image = frame.tobytes()
        self._size = size
        self.joint_pub = node.create_publisher(JointState, f"{ns}/joint_states", qos_profile_sensor_data)
        self.image_pubs = {v: node.create_publisher(Image, f"{ns}/cameras/{v}/image_raw", qos_profile_sensor_data)
                           for v in views}
        reliable = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
        self.trajectories: List[JointTrajectory] = []
        if command_type == "joint_trajectory":
            node.create_subscription(JointTrajectory, f"{ns}/arm_controller/commands", self._on_trajectory, reliable)
        else:
            node.create_subscription(Float64MultiArray, f"{ns}/arm_controller/commands", self._on_command, reliable)
        node.create_timer(0.01, self._publish_joints)
        node.create_timer(1 / 15, self._publish_images)

    def _on_trajectory(self, msg: JointTrajectory) -> None:
        self.trajectories.append(msg)
        self._apply(list(msg.points[0].positions) if msg.points else [])

    def _on_command(self, msg: Float64MultiArray, info) -> None:
        with self._lock:
            self.sent_at.append(info["source_timestamp"] * 1e-9)  # the node's publish time (wall)
        self._apply(list(msg.data))

    def _apply(self, values: List[float]) -> None:
        with self._lock:
            self.commands.append((time.monotonic(), values))
            if len(values) >= 7 and all(math.isfinite(v) for v in values[:7]):
                self.q = np.array(values[:7])  # a stiff position controller

    def _publish_joints(self) -> None:
        if not self.joint_states_on:
            return
        with self._lock:
            positions = [*self.q.tolist(), self.gripper]
        self.joint_pub.publish(JointState(name=[*JOINTS, "fr3_finger_joint1"], position=positions))

    def _publish_images(self) -> None:
        width, height = self._size
        for view, pub in self.image_pubs.items():
            if view in self.silent_views:
                continue
            pub.publish(Image(height=height, width=width, encoding="rgb8", step=width * 3, data=self._image))

    def command_log(self) -> List[Tuple[float, List[float]]]:
        with self._lock:
            return list(self.commands)

    def forget(self) -> None:
        """Start over, as a new arm would (a test on a node shared with others): no commands
        recorded, every camera and the joint states on."""
        with self._lock:
            self.commands.clear()
            self.sent_at.clear()
            self.trajectories.clear()
        self.silent_views.clear()
        self.joint_states_on = True

    def settled_commands(self, expected: int, since: float = 0.0, timeout_s: float = 5.0):
        """The commands received since `since` once `expected` of them have arrived (or timeout_s
        passed), and a moment more for any extra one: this process may receive reliable samples
        late, after a repair."""
        wait_until(lambda: len([t for t, _ in self.command_log() if t >= since]) >= expected, timeout_s)
        time.sleep(0.2)  # fixed: after its hold a node may send nothing more (or be gone) to bound this by
        return [(t, v) for t, v in self.command_log() if t >= since]

    def settled_stamps(self, expected: int, timeout_s: float = 5.0) -> List[float]:
        """The node's publish stamps (`sent_at`) once `expected` commands have arrived, and a moment
        more, as settled_commands: for timing by the node's clock rather than on arrival."""
        wait_until(lambda: len(self.sent_at) >= expected, timeout_s)
        time.sleep(0.2)  # fixed, as in settled_commands
        with self._lock:
            return list(self.sent_at)


class Planner:
    """What a planner uses: the act action, the two services, and the latched topics."""

    def __init__(self, node, ns: str):
        self.node = node
        self.act = ActionClient(node, Act, f"{ns}/sequence_ai_policy/act")
        self.set_instruction = node.create_client(SetInstruction, f"{ns}/sequence_ai_policy/set_instruction")
        self.interrupt = node.create_client(Trigger, f"{ns}/sequence_ai_policy/interrupt")
        self.outcomes: List[RunOutcome] = []
        self.warming: List[WarmingStatus] = []
        self.instructions: List[str] = []
        self.instruction_stamps: List[float] = []  # when the node published each (DDS source stamp, wall)
        self.refusals: List[str] = []  # ~/goal_refused: why goals were rejected
        node.create_subscription(String, f"{ns}/sequence_ai_policy/goal_refused",
                                 lambda m: self.refusals.append(m.data), LATCHED)
        node.create_subscription(RunOutcome, f"{ns}/sequence_ai_policy/run_outcome", self.outcomes.append, LATCHED)
        node.create_subscription(WarmingStatus, f"{ns}/sequence_ai_policy/warming", self.warming.append, LATCHED)
        node.create_subscription(String, f"{ns}/sequence_ai_policy/instruction", self._on_instruction, LATCHED)
        self.inputs_fresh = False
        self.diagnostics = None  # the node's latest DiagnosticStatus
        self.diagnosed: List[Tuple[float, Any]] = []  # every one: (when the node published it, DDS stamp, wall; it)
        self._diagnostics_name = f"{ns}/sequence_ai_policy: policy loop"
        node.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 10)
        # Feedback by a subscription of our own, not the action client's callback: rclpy forgets a
        # goal's feedback callback once its result arrives, so feedback this process receives late
        # (after a DDS repair) would be dropped. Keyed by the goal id `send` chooses.
        self._feedback: Dict[bytes, list] = {}
        node.create_subscription(Act.Impl.FeedbackMessage, f"{ns}/sequence_ai_policy/act/_action/feedback",
                                 self._on_feedback, QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE))

    def _on_instruction(self, message: String, info) -> None:
        self.instruction_stamps.append(info["source_timestamp"] * 1e-9)
        self.instructions.append(message.data)

    def _on_feedback(self, message) -> None:
        received = self._feedback.get(bytes(message.goal_id.uuid))
        if received is not None:
            received.append((time.monotonic(), message.feedback))

    def _on_diagnostics(self, message, info) -> None:
        for status in message.status:
            if status.name == self._diagnostics_name:
                self.inputs_fresh = status.level == b"\x00"
                self.diagnostics = status
                self.diagnosed.append((info["source_timestamp"] * 1e-9, status))

    def diagnosed_after(self, wall_s: float, shows: Callable[[Any], bool] = lambda status: True,
                        timeout_s: float = 10.0) -> Any:
        """The first status the node published after `wall_s` (time.time()) that `shows`, waited
        for; None if none came. A later message from the node: it bounds a wait for one it must not
        have sent, by the node's own progress."""
        def found() -> Any:
            return next((status for stamp, status in list(self.diagnosed) if stamp > wall_s and shows(status)), None)
        wait_until(found, timeout_s)
        return found()

    def ready(self) -> bool:
        return bool(self.warming) and self.warming[-1].ready

    def forget(self) -> None:
        """Start over, as a new planner would (a test on a node shared with others): no outcomes,
        refusals or feedback of earlier goals (the latest warming status, instruction and
        diagnostics stay: they describe the node now)."""
        self.outcomes.clear()
        self.refusals.clear()
        self._feedback.clear()

    # rclpy's ActionClient registers a request's future only after sending it; a response taken
    # by another executor thread in between is dropped. Every action-client call is therefore
    # made from a one-shot timer in the node's default callback group, the client's own group.
    def _in_executor(self, fn: Callable[[], None]) -> None:
        ran = threading.Event()

        def once() -> None:
            timer.cancel()
            try:
                fn()
            finally:
                ran.set()

        timer = self.node.create_timer(0.001, once)
        assert ran.wait(10.0), "the executor never ran the call"
        self.node.destroy_timer(timer)

    def send(self, instruction: str, max_seconds: float, max_actions: int = 0,
             feedback: Optional[list] = None) -> SentGoal:
        sent = self._send(instruction, max_seconds, max_actions, feedback)
        assert sent.handle.accepted, f"goal rejected: {self.refusals[-1:]}"
        return sent

    def rejected(self, instruction: str, max_seconds: float, max_actions: int = 0) -> str:
        """Send a goal the node must reject at once; returns the reason it gave on ~/goal_refused."""
        before = len(self.refusals)
        sent = self._send(instruction, max_seconds, max_actions, None)
        assert not sent.handle.accepted, "the goal was accepted"
        assert wait_until(lambda: len(self.refusals) > before, 5.0), "no reason on ~/goal_refused"
        return self.refusals[-1]

    def _send(self, instruction: str, max_seconds: float, max_actions: int, feedback: Optional[list]) -> SentGoal:
        goal = Act.Goal(instruction=instruction, max_seconds=float(max_seconds), max_actions=max_actions)
        assert self.act.wait_for_server(timeout_sec=10.0), "no act action server"
        goal_id = UUID(uuid=list(uuid.uuid4().bytes))
        if feedback is not None:
            self._feedback[bytes(goal_id.uuid)] = feedback
        sent = SentGoal(self)
        self._in_executor(lambda: self.act.send_goal_async(goal, goal_uuid=goal_id).add_done_callback(sent.on_goal))
        assert sent.accepted.wait(10.0), "goal response never came"
        return sent

    def cancel(self, sent: SentGoal, timeout_s: float = 5.0) -> bool:
        done = threading.Event()
        self._in_executor(lambda: sent.handle.cancel_goal_async().add_done_callback(lambda _: done.set()))
        return done.wait(timeout_s)

    @staticmethod
    def result(sent: SentGoal, timeout_s: float = 60.0):
        assert sent.done.wait(timeout_s), "no result in time"
        return sent.response

    def call(self, client, request, timeout_s: float = 5.0, attempts: int = 1):
        """One service call. `attempts` > 1 only for idempotent requests (parameter services):
        a request sent right after a node starts can lose its answer while the two sides are
        still discovering each other, and is then sent again."""
        assert client.wait_for_service(timeout_sec=10.0)
        for _ in range(attempts):
            future = client.call_async(request)
            if wait_until(future.done, timeout_s):
                return future.result()
        raise AssertionError(f"service did not answer ({attempts} attempt(s) of {timeout_s:g} s)")


class SentGoal:
    """A goal sent by Planner.send: its handle, and its result once it ends."""

    def __init__(self, planner: Planner):
        self.planner = planner
        self.handle: Any = None
        self.response: Any = None
        self.accepted = threading.Event()
        self.done = threading.Event()

    def on_goal(self, future: Any) -> None:
        self.handle = future.result()
        if self.handle.accepted:  # asked from the executor, so the result cannot be missed
            self.handle.get_result_async().add_done_callback(self.on_result)
        self.accepted.set()

    def on_result(self, future: Any) -> None:
        self.response = future.result()
        self.done.set()


class RosHarness:
    """One rclpy context per test, spun on a background thread, torn down after (spinning.py)."""

    def __init__(self):
        self._spun = Spinning()
        self.context = self._spun.context
        self.node = self._spun.create_node(f"test_harness_{next(_namespaces)}")
        self.executor = self._spun.spin([self.node], threads=3)

    def close(self):
        self._spun.close()


NODE_TOPICS: Dict[str, Any] = {  # the topics are the node's defaults: relative, so the namespace applies
    "startup_timeout_s": 60.0,
    # Generous input ages: the test process publishes the robot's inputs and shares two cores with
    # everything; it was seen to stop publishing for ~1 s now and then (while a new node process
    # starts). Tests of staleness set their own limits.
    "max_image_age_s": 2.0,
    "max_joint_state_age_s": 2.0,
    # Joint states lag the commands by a few periods when the machine is loaded, which shows up as
    # seam steps; a faster arm than the Franka keeps those runs going (safety tests set their own).
    "joint_velocity_max": [6.0] * 7,
}


class PolicyNodeFactory:
    def __init__(self, tmp_path: Path):
        self.tmp_path = tmp_path
        self.started: List[NodeProcess] = []

    def __call__(self, platform, ns: Optional[str] = None, **parameters: Any) -> Tuple[NodeProcess, str]:
        ns = ns or f"/arm{next(_namespaces)}"
        values = {**NODE_TOPICS, **parameters}
        log = self.tmp_path / f"policy_node{ns.replace('/', '_')}.log"
        process = NodeProcess("policy_node", namespace=ns, parameters=values, env=platform.env(), log_path=log)
        self.started.append(process)
        return process, ns

    def stop_all(self) -> None:
        for process in self.started:
            process.stop()


@contextmanager
def node_for_the_module(platform, log_dir: Path, **parameters: Any) -> Iterator[Tuple[RosHarness, Tuple[Any, ...]]]:
    """A harness and `start_arm`'s (process, arm, planner) on a reset platform, for a module's tests
    to share (the node's start paid once); everything stopped on exit."""
    harness = RosHarness()
    factory = PolicyNodeFactory(log_dir)
    try:
        platform.reset()
        yield harness, start_arm(harness, factory, platform, **parameters)
    finally:
        factory.stop_all()
        harness.close()


@pytest.fixture
def ros() -> Iterator[RosHarness]:
    harness = RosHarness()
    yield harness
    harness.close()


@pytest.fixture
def policy_node(tmp_path) -> Iterator[PolicyNodeFactory]:
    factory = PolicyNodeFactory(tmp_path)
    yield factory
    factory.stop_all()


def start_arm(ros: RosHarness, policy_node: PolicyNodeFactory, platform, **parameters: Any):
    """Node + arm double + planner, waited on until the node reports ready."""
    process, ns = policy_node(platform, **parameters)
    arm = ArmDouble(ros.node, ns, command_type=parameters.get("command_type", "float64_multi_array"))
    planner = Planner(ros.node, ns)
    ready = wait_until(lambda: (planner.ready() and planner.inputs_fresh) or not process.running, 30.0)
    assert process.running, process.output()[-2000:]
    assert ready, "node never reported ready:\n" + process.output()[-2000:]
    return process, arm, planner
