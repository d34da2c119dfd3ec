"""The cancel flood: planner processes sending Act goals to one policy node and cancelling each
accepted one at once, for a while; how many cancel requests get an answer, and where the others go.

    scripts/workspace.sh run .venv/bin/python -P bench/bench_cancel_flood.py [--clients 3] [--seconds 20]

The local platform, `sim_robot` and the policy node (`busy_policy: reject`, so most goals are
rejected while one runs), and `--clients` planner processes. Each loops: send a goal, and if it
is accepted ask for its result, wait 0-0.3 s, cancel it, wait up to 5 s for the cancel's answer
and up to 15 s for the result. Two ways to call rclpy's ActionClient, one run each:

* `thread`: from the main thread while a MultiThreadedExecutor spins in another (the usual
  script). rclpy (7.1, Jazzy) registers a request's future only after sending it: an answer that
  an executor thread takes in between is dropped ("Ignoring unexpected cancel response").
* `fresh`: as `thread`, but each cancel through a service client made for it, on the action's
  `_action/cancel_goal` service (what `ros2 service call` does).
* `executor`: every call from a callback of the node's default (mutually exclusive) group, the
  action client's own, so no answer can be taken before its future exists (test/reliability/
  _ros_goals.py does this).

Each client prints one JSON line of counts; "ignored" counts rclpy's "Ignoring unexpected ...
response" warnings in its log: answers that arrived and were dropped on the client's side.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Callable, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

RAN_ON_S = 1.0  # a goal whose result comes this long after its accepted cancel went on moving

COUNTS = ("goals", "goal_unanswered", "accepted", "rejected", "cancels", "cancel_answered", "cancel_unanswered",
          "results", "result_missing", "cancel_ms_max", "cancel_refused", "ran_on")


def flood(namespace: str, seconds: float, mode: str, cancel_after_s: float = 0.3) -> Dict[str, int]:
    """One planner process: the loop above for `seconds`; the counts."""
    from rclpy.action import ActionClient
    from sequence_ai_ros.action import Act

    from sequence_ai_ros.spinning import Spinning

    spun = Spinning()
    node = spun.create_node(f"flood_{os.getpid()}")
    act = ActionClient(node, Act, f"{namespace}/sequence_ai_policy/act")
    spun.spin([node], threads=3)
    counts = dict.fromkeys(COUNTS, 0)

    def call(fn: Callable[[], Any]) -> Any:
        if mode == "thread":
            return fn()
        made: List[Any] = []
        ran = threading.Event()

        def once() -> None:
            timer.cancel()
            made.append(fn())
            ran.set()
        timer = node.create_timer(0.0001, once)
        ran.wait(10.0)
        node.destroy_timer(timer)
        return made[0] if made else None

    act.wait_for_server(timeout_sec=20.0)
    goal = Act.Goal(instruction="pick up the cup", max_seconds=5.0, max_actions=0)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        counts["goals"] += 1
        sent = call(lambda: act.send_goal_async(goal))
        if sent is None or not common.wait_until(sent.done, 5.0):
            counts["goal_unanswered"] += 1
            continue
        handle = sent.result()
        if not handle.accepted:
            counts["rejected"] += 1
            continue
        counts["accepted"] += 1
        result = call(handle.get_result_async)
        time.sleep(random.uniform(0.0, cancel_after_s))
        counts["cancels"] += 1
        asked = time.monotonic()
        cancel = call(handle.cancel_goal_async) if mode != "fresh" else _cancel_with_a_fresh_client(node, namespace, handle)
        answered = cancel is not None and common.wait_until(cancel.done, 5.0)
        if answered and not cancel.result().goals_canceling:
            counts["cancel_refused"] += 1  # answered: the goal had ended already (ERROR_GOAL_TERMINATED)
        if answered:
            counts["cancel_ms_max"] = max(counts["cancel_ms_max"], int((time.monotonic() - asked) * 1000))
        counts["cancel_answered" if answered else "cancel_unanswered"] += 1
        got = result is not None and common.wait_until(result.done, 15.0)
        counts["results" if got else "result_missing"] += 1
        if got and answered and cancel.result().goals_canceling and time.monotonic() - asked > RAN_ON_S:
            counts["ran_on"] += 1  # the cancel was accepted, yet the goal went on (its result came late)
            reason = result.result().result.outcome.reason
            counts[f"ran_on {reason}"] = counts.get(f"ran_on {reason}", 0) + 1
    spun.close()
    return counts


def _cancel_with_a_fresh_client(node: Any, namespace: str, handle: Any) -> Any:
    """The cancel service called by a client made for it (as `ros2 service call` does)."""
    from action_msgs.srv import CancelGoal

    client = node.create_client(CancelGoal, f"{namespace}/sequence_ai_policy/act/_action/cancel_goal")
    if not client.wait_for_service(timeout_sec=5.0):
        return None
    request = CancelGoal.Request()
    request.goal_info.goal_id = handle.goal_id
    return client.call_async(request)


def measure(clients: int = 3, seconds: float = 20.0, mode: str = "thread", busy_policy: str = "reject",
            estop_hz: float = 0.0, cancel_after_s: float = 0.3, log: Callable[..., None] = print) -> Dict[str, Any]:
    """The summed counts of `clients` flooding processes, or {"skipped": why}."""
    try:
        from sequence_ai_ros.tools.processes import NodeProcess, config_path, ros_environment
    except ImportError as exc:
        return {"skipped": f"ROS not importable ({exc}); run through scripts/workspace.sh"}
    os.environ.update({k: v for k, v in ros_environment().items() if k.startswith(("ROS_", "RMW_", "FASTRTPS_"))})
    tmp = tempfile.mkdtemp(prefix="bench-cancel-flood-")
    namespace = f"/flood_arm_{os.getpid()}"
    totals: Dict[str, Any] = dict.fromkeys(COUNTS, 0)
    with common.bench_platform() as platform:
        params = [config_path("demo.yaml")]
        robot = NodeProcess("sim_robot", namespace=namespace, params_files=params, env=platform.env(),
                            log_path=os.path.join(tmp, "sim_robot.log"))
        node = NodeProcess("policy_node", namespace=namespace, params_files=params, env=platform.env(),
                           parameters={"busy_policy": busy_policy, "estop_topic": "estop", "estop_start_engaged": False},
                           log_path=os.path.join(tmp, "policy_node.log"))
        toggling = _toggle_estop(namespace, estop_hz, seconds + 5.0) if estop_hz > 0 else None
        try:
            if not common.wait_until(lambda: " is ready after " in node.output() or not node.running, 60.0):
                return {"skipped": "the node never became ready: " + node.output()[-500:]}
            logs = [os.path.join(tmp, f"client{i}.log") for i in range(clients)]
            started = [subprocess.Popen([sys.executable, "-P", os.path.abspath(__file__), "--flood", namespace,
                                         "--seconds", str(seconds), "--mode", mode, "--cancel-after", str(cancel_after_s)],
                                        stdout=subprocess.PIPE, stderr=open(path, "w"), text=True)  # noqa: SIM115
                       for path in logs]
            for process in started:
                out, _ = process.communicate(timeout=seconds + 120)
                line = out.strip().splitlines()[-1] if out.strip() else "{}"
                for key, value in json.loads(line).items():
                    totals[key] = max(totals[key], value) if key == "cancel_ms_max" else totals.get(key, 0) + value
            totals["ignored"] = sum(_count(path, "Ignoring unexpected") for path in logs)
        finally:
            if toggling is not None:
                toggling.join()
            node.stop()
            robot.stop()
    cancels = totals["cancels"] or 1
    totals["unanswered_pct"] = round(100.0 * totals["cancel_unanswered"] / cancels, 1)
    log(f"  {mode}, busy_policy {busy_policy}: {clients} clients × {seconds:g} s: {totals['goals']} goals, {totals['accepted']} accepted, "
        f"{totals['cancels']} cancels, {totals['cancel_unanswered']} unanswered ({totals['unanswered_pct']} %), "
        f"{totals['cancel_refused']} answered 'already ended', "
        f"{totals['ignored']} answers dropped by rclpy on arrival, {totals['result_missing']} results missing, "
        f"slowest answer {totals['cancel_ms_max']} ms, {totals['ran_on']} goals still going {RAN_ON_S:g} s after "
        f"their cancel was accepted {({k[7:]: v for k, v in totals.items() if k.startswith('ran_on ')})}")
    return totals


def _toggle_estop(namespace: str, hz: float, seconds: float) -> threading.Thread:
    """A thread of this process pressing and releasing the node's e-stop at `hz` for `seconds`."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Bool

    from sequence_ai_ros.spinning import Spinning

    def toggle() -> None:
        spun = Spinning()
        node = spun.create_node("flood_estop")
        latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        publisher = node.create_publisher(Bool, f"{namespace}/estop", latched)
        deadline, pressed = time.monotonic() + seconds, False
        while time.monotonic() < deadline:
            pressed = not pressed
            publisher.publish(Bool(data=pressed))
            time.sleep(1.0 / hz)
        publisher.publish(Bool(data=False))
        time.sleep(0.5)
        spun.close()
    thread = threading.Thread(target=toggle, daemon=True)
    thread.start()
    return thread


def _count(path: str, words: str) -> int:
    with open(path, errors="replace") as handle:
        return sum(words in line for line in handle)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--mode", choices=("thread", "executor", "fresh", "both"), default="both")
    parser.add_argument("--busy-policy", choices=("reject", "preempt"), default="reject")
    parser.add_argument("--estop-hz", type=float, default=0.0, help="toggle the e-stop at this rate meanwhile")
    parser.add_argument("--cancel-after", type=float, default=0.3, help="cancel a random 0..this many s after acceptance")
    parser.add_argument("--flood", metavar="NAMESPACE", help=argparse.SUPPRESS)  # one client process
    args = parser.parse_args(argv)
    if args.flood:
        print(json.dumps(flood(args.flood, args.seconds, args.mode, args.cancel_after)), flush=True)
        return 0
    for mode in (("thread", "executor") if args.mode == "both" else (args.mode,)):
        result = measure(args.clients, args.seconds, mode, args.busy_policy, args.estop_hz, args.cancel_after)
        if "skipped" in result:
            print(f"skipped: {result['skipped']}")
            return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
