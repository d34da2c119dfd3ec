"""E-stop press → hold through the ROS node, with and without a 1 kHz `false` flood beside it.

    scripts/workspace.sh run .venv/bin/python -P bench/bench_estop.py [--presses 20] [--flood-hz 1000]

Processes on loopback DDS: the local platform (answering at once), the policy node (`estop_topic`
set), bench_ros_jitter.py's camera process, a pendant (test/ros/estop_pendant.py: latched
`std_msgs/Bool`, each press stamped with its wall clock just before the publish), and for the
second half a dashboard publishing latched `false` at `--flood-hz` (the same script, `flood:HZ`);
this process is the arm (bench_ros_jitter.Arm: joint states following the commands, each command's
DDS source stamp kept). Each press: a goal runs, once its commands flow the pendant presses, the
goal ends `estop`, and press → hold = the node's stamp of its last command (the hold: a goal
publishes its `actions` commands and then one hold) − the pendant's stamp of the press. Both are
the machine's wall clock (DDS source stamps are wall time), read by the two processes that did
the work, not by this one. Then the pendant releases and the next goal starts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_ros_jitter
import common

HZ = 15.0
PENDANT = os.path.join(common.ROOT, "test", "ros", "estop_pendant.py")
NODE_PARAMETERS: Dict[str, object] = {**{k: v for k, v in bench_ros_jitter.NODE_PARAMETERS.items()
                                         if k != "realtime_priority"},  # ordinary scheduling, the default
                                      "estop_topic": "estop", "estop_start_engaged": False,
                                      "diagnostics_period_s": 0.2}


class _Publisher:
    """An e-stop publisher process (estop_pendant.py); `say` returns its stamp of the publish (s)."""

    def __init__(self, topic: str, first: str, env: Dict[str, str]):
        self.process = subprocess.Popen([sys.executable, PENDANT, topic, first], env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline().strip()
        if not line.startswith("flooding" if first.startswith("flood:") else f"published {first}"):
            raise RuntimeError(f"the e-stop publisher said {line!r}")

    def say(self, value: str) -> float:
        self.process.stdin.write(f"{value}\n")
        self.process.stdin.flush()
        word, _, stamp = self.process.stdout.readline().strip().rpartition(" ")
        if word != f"published {value}":
            raise RuntimeError(f"the pendant said {word!r}")
        return int(stamp) * 1e-9

    def stop(self) -> str:
        self.process.stdin.close()
        try:
            out = self.process.stdout.read()
            self.process.wait(10.0)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out = ""
        return out.strip()


class _Goal:
    """One goal sent: accepted or not, then its result (asked for from the executor, in the goal
    response's callback, so it cannot be missed)."""

    def __init__(self) -> None:
        self.handle: Any = None
        self.result: Any = None
        self.answered, self.done = threading.Event(), threading.Event()

    def on_goal(self, future: Any) -> None:
        self.handle = future.result()
        if self.handle.accepted:
            self.handle.get_result_async().add_done_callback(self.on_result)
        self.answered.set()

    def on_result(self, future: Any) -> None:
        self.result = future.result().result
        self.done.set()


class _Goals:
    """The act action, every call made from the executor (rclpy registers a request's future only
    after sending it: an answer taken by another thread in between is dropped)."""

    def __init__(self, node: Any, namespace: str):
        from rclpy.action import ActionClient
        from sequence_ai_ros.action import Act

        self.node, self.Act = node, Act
        self.act = ActionClient(node, Act, f"{namespace}/sequence_ai_policy/act")

    def send(self, max_seconds: float) -> Optional[_Goal]:
        """The goal once accepted; None if refused (or unanswered)."""
        goal = _Goal()

        def once() -> None:
            timer.cancel()
            sent = self.act.send_goal_async(self.Act.Goal(instruction="pick up the cup", max_seconds=max_seconds))
            sent.add_done_callback(goal.on_goal)

        timer = self.node.create_timer(0.001, once)
        answered = goal.answered.wait(20.0)
        self.node.destroy_timer(timer)
        return goal if answered and goal.handle.accepted else None


def _cpu_s(pid: int) -> float:
    """A process's CPU time so far (user + system, all its threads), from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def _press_to_hold(goals: _Goals, arm: Any, pendant: _Publisher, presses: int, node_pid: int,
                   log: Callable[..., None]) -> Dict[str, Any]:
    late: List[float] = []
    errors: List[str] = []
    cpu0, wall0 = _cpu_s(node_pid), time.monotonic()
    for _ in range(presses):
        arm.published.clear()
        sent = None
        deadline = time.monotonic() + 10.0
        while sent is None and time.monotonic() < deadline:
            sent = goals.send(60.0)  # refused while the pendant's release is on its way: asked again
        if sent is None:
            errors.append("goal refused")
            break
        if not common.wait_until(lambda: len(arm.published) >= 2, 10.0):
            errors.append("the goal never moved the arm")
            break
        pressed_s = pendant.say("true")
        if not sent.done.wait(20.0):
            errors.append("no result after the press")
            break
        outcome = sent.result.outcome
        if outcome.reason != "estop":
            errors.append(f"the goal ended {outcome.reason}: {outcome.message}")
        elif common.wait_until(lambda n=outcome.actions + 1: len(arm.published) >= n, 10.0):
            late.append(max(arm.published) - pressed_s)
        else:
            errors.append("the hold never arrived")
        pendant.say("false")
    cpu_share = (_cpu_s(node_pid) - cpu0) / (time.monotonic() - wall0)
    if late:
        log(f"  press → hold ms: {', '.join(f'{x * 1000:.1f}' for x in late)}; the node's CPU {cpu_share:.0%} of a core")
    return {"press_to_hold_s": late, "errors": errors, "node_cpu_share": cpu_share}


def measure(presses: int = 20, flood_hz: float = 1000.0, log: Callable[..., None] = print) -> Dict[str, Any]:
    """{"quiet": {...}, "flood": {...}} each with "press_to_hold_s" (one per press) and "errors";
    "flood_rate" is the node's diagnostics value for the flooding publisher; or {"skipped": why}."""
    try:
        from diagnostic_msgs.msg import DiagnosticArray

        from sequence_ai_ros.spinning import Spinning
        from sequence_ai_ros.tools.processes import NodeProcess, ros_environment
    except ImportError as exc:
        return {"skipped": f"ROS not importable ({exc}); run through scripts/workspace.sh bench"}
    env = ros_environment()
    os.environ.update({k: v for k, v in env.items() if k.startswith(("ROS_", "RMW_", "FASTRTPS_"))})
    tmp = tempfile.mkdtemp(prefix="bench-estop-")
    namespace = f"/bench_estop_{os.getpid()}"
    topic = f"{namespace}/estop"
    result: Dict[str, Any] = {}
    with common.bench_platform() as platform:
        cameras = subprocess.Popen([sys.executable, "-P", bench_ros_jitter.__file__, "--publish-cameras", namespace,
                                    "--seconds", "3600", "--camera-log", os.path.join(tmp, "cameras.log")])
        node_process = NodeProcess("policy_node", namespace=namespace, parameters=NODE_PARAMETERS,
                                   env=platform.env(), log_path=os.path.join(tmp, "policy_node.log"))
        spun = Spinning()
        node = spun.create_node("bench_estop_arm")
        publishers: List[_Publisher] = []
        try:
            arm = bench_ros_jitter.Arm(node, namespace)
            estop_status: Dict[str, Any] = {}
            name = f"{namespace}/sequence_ai_policy: e-stop"
            node.create_subscription(DiagnosticArray, "/diagnostics", lambda m: estop_status.update(
                {s.name: s for s in m.status if s.name == name}), 10)
            goals = _Goals(node, namespace)
            spun.spin([node], threads=3)
            publishers.append(_Publisher(topic, "false", env))
            pendant = publishers[-1]
            if not goals.act.wait_for_server(timeout_sec=60.0) or not common.wait_until(
                    lambda: _publisher_states(estop_status.get(name)) == ["released"], 60.0):
                return {"skipped": "the node never became ready: " + node_process.output()[-500:]}
            result["quiet"] = _press_to_hold(goals, arm, pendant, presses, node_process.process.pid, log)
            publishers.append(_Publisher(topic, f"flood:{flood_hz:g}", env))
            heard = lambda: len(_publisher_states(estop_status.get(name))) == 2 and "silent" not in \
                _publisher_states(estop_status.get(name))  # noqa: E731
            if not common.wait_until(heard, 20.0):
                return {**result, "skipped": "the node never heard the flood"}
            # Its rate is shown once a second of it is counted (a node without flood reporting: 5 s).
            common.wait_until(lambda: any("flooding" in s for s in _publisher_states(estop_status.get(name))), 5.0)
            result["flood"] = _press_to_hold(goals, arm, pendant, presses, node_process.process.pid, log)
            result["flood_rate"] = next((s for s in _publisher_states(estop_status.get(name)) if "flooding" in s), "")
        finally:
            for publisher in publishers:
                said = publisher.stop()
                if said.startswith("flooded"):
                    result["flooded"] = said
            spun.close()
            node_process.stop()
            cameras.terminate()
            cameras.wait(10)
    for case in ("quiet", "flood"):
        late = result.get(case, {}).get("press_to_hold_s") or []
        if late:
            log(f"  e-stop press → hold, {case}: p50 {common.percentile(late, 50) * 1000:.1f} ms, "
                f"p99 {common.percentile(late, 99) * 1000:.1f} ms over {len(late)} presses")
    return result


def _publisher_states(status: Any) -> List[str]:
    return [kv.value for kv in status.values if kv.key.startswith("publisher ")] if status is not None else []


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presses", type=int, default=20)
    parser.add_argument("--flood-hz", type=float, default=1000.0)
    args = parser.parse_args(argv)
    result = measure(args.presses, args.flood_hz)
    print(json.dumps({k: v if not isinstance(v, dict) else {kk: vv for kk, vv in v.items()}
                      for k, v in result.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
