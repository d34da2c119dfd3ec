"""The ROS node at 15 Hz with two camera streams flowing: command interval jitter, and how old a
camera frame is when the /act request carrying it reaches the worker.

    scripts/workspace.sh run .venv/bin/python -P bench/bench_ros_jitter.py [--seconds 20] [--record]

Four processes, all on loopback DDS: the local platform (worker plug-in `bench_policy.delayed`,
no added latency, reading a frame counter out of each request's exterior_1 image); the policy
node (`NodeProcess`); a camera process publishing two 448×252 rgb8 streams at 15 fps (under Fast
DDS's 512 KB shared-memory segment, as the demo: docs/ROS.md "Large raw frames"), each frame
painted with its counter as 16 black/white stripes, logging the wall time of every publish; and
this process, the arm: joint states at 100 Hz following the position commands, and the command
subscriber, which stamps each command on arrival. One goal of N actions; with `--record`
(`measure(record=True)`) the node records it (record_dir, docs/RECORDING.md).

Jitter = |interval between consecutive commands − 1/15 s|, as the controller receives them (the
final hold excluded). Camera→request = worker arrival time of an /act − publish time of the
frame it carries (same host, same wall clock).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

HZ = 15.0
WIDTH, HEIGHT, FPS = 448, 252, 15.0
VIEWS = ("exterior_1", "wrist_left")
HOME = [0.0, -0.5, 0.0, -2.2, 0.0, 1.8, 0.8]
JOINTS = [f"fr3_joint{i}" for i in range(1, 8)]
NODE_PARAMETERS: Dict[str, object] = {
    "camera_topics": [f"cameras/{v}/image_raw" for v in VIEWS],
    "joint_states_topic": "joint_states",
    "command_topic": "arm_controller/commands",
    "startup_timeout_s": 60.0,
    "max_image_age_s": 1.5,
    "max_joint_state_age_s": 1.0,
    "joint_velocity_max": [6.0] * 7,
    # Opt-in SCHED_FIFO for the timer's and the goal's threads, as on a robot set up for it
    # (docs/ROS.md "Real-time priority"); the default is ordinary scheduling.
    "realtime_priority": 40,
}


def paint_tag(frame, counter: int) -> None:
    """Write `counter` as TAG_BITS full-height stripes, white = 1 (read by bench_policy.read_tag)."""
    from bench_policy import TAG_BITS as bits

    stripe = frame.shape[1] // bits
    for bit in range(bits):
        frame[:, bit * stripe:(bit + 1) * stripe] = 255 if counter >> bit & 1 else 0


def publish_cameras(namespace: str, seconds: float, log_path: str) -> int:
    """The camera process: two streams at FPS for `seconds`, one log line per frame."""
    import numpy as np
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image

    from sequence_ai_ros.spinning import Spinning

    spun = Spinning(stop_on_signals=True)  # the bench ends it with SIGTERM
    node = spun.create_node("bench_cameras", namespace=namespace)
    publishers = {v: node.create_publisher(Image, f"cameras/{v}/image_raw", qos_profile_sensor_data) for v in VIEWS}
    frame = np.zeros((HEIGHT, WIDTH, 3), dtype=np.uint8)
    deadline = time.monotonic() + seconds
    next_due = time.monotonic()
    counter = 0
    with open(log_path, "w") as log, contextlib.suppress(Exception, KeyboardInterrupt):
        while time.monotonic() < deadline and not spun.stopped.is_set():
            counter += 1
            paint_tag(frame, counter)
            data = frame.tobytes()
            published = time.time()
            for publisher in publishers.values():
                publisher.publish(Image(height=HEIGHT, width=WIDTH, encoding="rgb8", step=WIDTH * 3, data=data))
            log.write(f"{counter} {published}\n")
            log.flush()  # the bench waits on these lines before the goal
            next_due += 1.0 / FPS
            spun.stopped.wait(max(0.0, next_due - time.monotonic()))
    spun.close()
    return 0


class Arm:
    """Joint states following position commands; every command stamped on arrival."""

    def __init__(self, node, namespace: str):
        from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
        from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        self.q = list(HOME)
        self.arrivals: List[float] = []  # monotonic, on arrival at this subscriber
        self.published: List[float] = []  # the node's DDS source timestamps (wall clock, seconds)
        self.joint_times: List[float] = []  # monotonic, each joint-state publish
        self._joint_state = JointState
        self.joint_pub = node.create_publisher(JointState, f"{namespace}/joint_states", qos_profile_sensor_data)
        node.create_subscription(Float64MultiArray, f"{namespace}/arm_controller/commands", self._on_command,
                                 QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE),
                                 callback_group=MutuallyExclusiveCallbackGroup())
        node.create_timer(0.01, self._publish_joints, callback_group=MutuallyExclusiveCallbackGroup())

    def _on_command(self, message, info) -> None:
        self.arrivals.append(time.monotonic())
        self.published.append(info["source_timestamp"] * 1e-9)
        values = list(message.data)
        if len(values) >= 7:
            self.q = values[:7]

    def _publish_joints(self) -> None:
        self.joint_times.append(time.monotonic())
        self.joint_pub.publish(self._joint_state(name=[*JOINTS, "fr3_finger_joint1"], position=[*self.q, 0.04]))


def _largest_gap(times: List[float]) -> float:
    return max((b - a for a, b in zip(times, times[1:])), default=float("nan"))


def measure(seconds: float = 20.0, log: Callable[..., None] = print, record: bool = False) -> Dict[str, object]:
    """{"intervals": [s], "camera_to_request": [s], "actions": n, "reason": ...} or {"skipped": why}.
    With `record`, the node records the goal: "recording" (its path), "frames_dropped", and
    "recording_complete" (the file finished and read back)."""
    try:
        from rclpy.action import ActionClient
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sequence_ai_ros.action import Act
        from sequence_ai_ros.msg import WarmingStatus

        from sequence_ai_ros.spinning import Spinning
        from sequence_ai_ros.tools.processes import NodeProcess, ros_environment
    except ImportError as exc:
        return {"skipped": f"ROS not importable ({exc}); run through scripts/workspace.sh bench"}
    os.environ.update({k: v for k, v in ros_environment().items() if k.startswith(("ROS_", "RMW_", "FASTRTPS_"))})
    tmp = tempfile.mkdtemp(prefix="bench-ros-")
    requests_log, cameras_log = os.path.join(tmp, "requests.log"), os.path.join(tmp, "cameras.log")
    namespace = f"/bench_arm_{os.getpid()}"
    actions = int(seconds * HZ)
    result: Dict[str, object] = {}
    with common.bench_platform(log_path=requests_log, frame_tag=True) as platform:
        cameras = subprocess.Popen([sys.executable, "-P", os.path.abspath(__file__), "--publish-cameras", namespace,
                                    "--seconds", str(seconds + 40), "--camera-log", cameras_log])
        parameters = {**NODE_PARAMETERS, **({"record_dir": os.path.join(tmp, "recordings")} if record else {})}
        node_process = NodeProcess("policy_node", namespace=namespace, parameters=parameters,
                                   env=platform.env(), log_path=os.path.join(tmp, "policy_node.log"))
        spun = Spinning()
        node = spun.create_node("bench_arm")
        try:
            arm = Arm(node, namespace)
            warming: List = []
            latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            node.create_subscription(WarmingStatus, f"{namespace}/sequence_ai_policy/warming", warming.append, latched)
            act = ActionClient(node, Act, f"{namespace}/sequence_ai_policy/act")
            spun.spin([node], threads=3)
            if not common.wait_until(lambda: bool(warming) and warming[-1].ready, 60.0) or not node_process.running:
                return {"skipped": "the node never became ready: " + node_process.output()[-500:]}
            # The camera process may still be starting (importing rclpy, discovery): the goal waits
            # until it has published for a second, so the node's caches hold live frames.
            if not common.wait_until(lambda: _lines(cameras_log) >= 2 * int(FPS), 60.0):
                return {"skipped": "the camera process never published"}
            time.sleep(1.0)
            if not act.wait_for_server(timeout_sec=20.0):
                return {"skipped": "no act action server"}
            arm.arrivals.clear()
            arm.published.clear()
            goal = Act.Goal(instruction="pick up the cup", max_seconds=seconds * 3 + 10, max_actions=actions)
            future = act.send_goal_async(goal)
            if not common.wait_until(future.done, 20.0):
                return {"skipped": "goal not answered"}
            answer = future.result().get_result_async()
            if not common.wait_until(answer.done, seconds * 3 + 30):
                return {"skipped": "goal did not finish"}
            outcome = answer.result().result.outcome
            result["actions"], result["reason"], result["planned"] = int(outcome.actions), outcome.reason, actions
            result["message"] = outcome.message
            result["underruns"] = int(outcome.underruns)
            if record:
                result["recording"], result["frames_dropped"] = outcome.recording, int(outcome.recording_frames_dropped)
                result["recording_complete"] = bool(outcome.recording) and common.wait_until(
                    lambda: _recording_complete(outcome.recording), 30.0)
            arrivals = arm.arrivals[: int(outcome.actions)]  # the hold that follows is not a control tick
            result["intervals"] = [b - a for a, b in zip(arrivals, arrivals[1:])]
            published = arm.published[: int(outcome.actions)]
            result["publish_intervals"] = [b - a for a, b in zip(published, published[1:])]
            result["publish_times"] = published
            result["largest_joint_state_gap_s"] = _largest_gap(list(arm.joint_times))
        finally:
            spun.close()
            node_process.stop()
            cameras.terminate()
            cameras.wait(10)
    published = {}
    if os.path.exists(cameras_log):
        with open(cameras_log) as handle:
            for line in handle:
                counter, stamp = line.split()
                published[int(counter)] = float(stamp)
    stamps = sorted(published.values())
    result["frames_published"] = len(stamps)
    result["largest_publish_gap_s"] = _largest_gap(stamps)
    calls = [c for c in common.read_log(requests_log) if c.get("instruction") == "pick up the cup"]
    result["camera_to_request"] = [c["time"] - published[c["tag"]] for c in calls if c.get("tag") in published]
    result["requests"], result["tagged"] = len(calls), len(result["camera_to_request"])
    # Which late commands went out right behind an /act request (observe + encode run on the
    # goal thread between the tick and the command): publish within 30 ms of a request's arrival.
    request_times = [c["time"] for c in calls]
    late = [t for t, i in zip(result.get("publish_times", [])[1:], result.get("publish_intervals", []))
            if abs(i - 1.0 / HZ) > 0.002]
    result["late_commands"] = len(late)
    result["late_next_to_request"] = sum(any(abs(t - r) < 0.03 for r in request_times) for t in late)
    intervals = result.get("intervals") or []
    jitter = [abs(i - 1.0 / HZ) for i in intervals]
    log(f"  ros: {result.get('actions')} actions ({result.get('reason')}), jitter p99 "
        f"{common.percentile(jitter, 99) * 1000:.2f} ms, camera→request p50 "
        f"{common.percentile(result['camera_to_request'], 50) * 1000:.1f} ms "
        f"({result['tagged']}/{result['requests']} requests matched to a frame), largest gap between camera "
        f"publishes {result['largest_publish_gap_s'] * 1000:.0f} ms, between joint-state publishes "
        f"{result.get('largest_joint_state_gap_s', float('nan')) * 1000:.0f} ms"
        + ("" if result.get("reason") in (None, "completed") else f"; the node said: {result.get('message')}"))
    return result


def _recording_complete(path: str) -> bool:
    from sequence_ai.recording import read_run

    return read_run(path).complete


def _lines(path: str) -> int:
    try:
        with open(path) as handle:
            return sum(1 for _ in handle)
    except OSError:
        return 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--record", action="store_true", help="the node records the goal (record_dir)")
    parser.add_argument("--publish-cameras", metavar="NAMESPACE", help=argparse.SUPPRESS)
    parser.add_argument("--camera-log", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.publish_cameras:
        return publish_cameras(args.publish_cameras, args.seconds, args.camera_log)
    result = measure(args.seconds, record=args.record)
    jitter = sorted(abs(i - 1.0 / HZ) * 1000 for i in result.get("intervals") or [])
    print("largest |interval - period| ms:", ", ".join(f"{j:.1f}" for j in jitter[-12:]))
    at_node = sorted(abs(i - 1.0 / HZ) * 1000 for i in result.get("publish_intervals") or [])
    intervals = result.get("publish_intervals") or []
    worst = sorted(range(len(intervals)), key=lambda i: abs(intervals[i] - 1.0 / HZ))[-3:]
    print(f"at the node's publish: p99 {common.percentile(at_node, 99):.2f} ms, largest:",
          ", ".join(f"{j:.1f}" for j in at_node[-6:]), "at intervals",
          ", ".join(f"#{i} ({intervals[i] * 1000:.1f} ms)" for i in worst))
    print(json.dumps({k: v for k, v in result.items() if not isinstance(v, list)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
