"""The ROS node at the platform's real latency, on the simulated arm, in the closed loop.

    scripts/workspace.sh run .venv/bin/python -P bench/bench_ros_latency.py [--seconds 20] [--latencies 0.05,0.6,0.7,0.8]

For each case a local platform whose worker serves the stand-in behind latency ±20 %
(`bench_policy.delayed`), the policy node with the shipped `config/policy.yaml` (pi05-droid,
position interface; only the start-up budget and input ages are widened for a busy 2-core
machine), and `sim_robot` (the simulated arm: joint states at 100 Hz, two 448×252 cameras, as in
`config/demo.yaml`), each in its own process; this process is the planner: one `act` goal toward
the instruction's goal from the arm's home pose, and the commands as they arrive.

Cases: the node's defaults at each latency; the appending rule (`take_over: false`)
at each latency above the window; and at 0.7 s the node as it was before pipelining (`lookahead: 1`,
`stitch: align`, with `take_over: false`, which those need: the stop-and-go loop).
Figures, as in bench_latency: held share (the outcome's underrun_s / elapsed_s), requests per second
of motion (chunks ÷ actions/15), largest step between consecutive commanded targets ÷ the median
step while moving, time from the goal to every joint settled within 0.02 rad of the goal, largest
overshoot past the goal; and the age of the observation behind each command and its lateness (when
it played − the moment its row was for), p50 / max, from the goal's RunOutcome (`age_p50_s`,
`age_max_s`, `lateness_p50_s`, `lateness_max_s`; NaN where the node knew none).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_latency
import common

HZ = 15.0
SIM = {"image_width": 448, "image_height": 252, "camera_hz": 15.0, "joint_state_hz": 100.0}
NODE = {"startup_timeout_s": 60.0, "max_image_age_s": 1.0, "max_joint_state_age_s": 0.5}
APPENDING = {"take_over": False}  # the appending rule, kept reachable for the comparison
BEFORE = {"lookahead": 1, "stitch": "align", **APPENDING}  # the node's loop before pipelining


def case(latency_s: float, seconds: float, overrides: Dict[str, object], seed: int,
         log: Callable[..., None] = print, policy_url: Optional[str] = None) -> Dict[str, object]:
    """One goal on a fresh platform, node and arm: the figures, or {"error": why}. `policy_url`: no
    platform; the node drives the policy server there (an openpi server, bench_openpi.py)."""
    from rclpy.action import ActionClient
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
    from sensor_msgs.msg import Image, JointState
    from sequence_ai_ros.action import Act
    from sequence_ai_ros.msg import WarmingStatus
    from std_msgs.msg import Float64MultiArray

    from sequence_ai_ros.spinning import Spinning
    from sequence_ai_ros.tools.processes import NodeProcess, config_path, ros_environment

    os.environ.update({k: v for k, v in ros_environment().items() if k.startswith(("ROS_", "RMW_", "FASTRTPS_"))})
    tmp = tempfile.mkdtemp(prefix="bench-ros-latency-")
    namespace = f"/latency_arm_{os.getpid()}_{seed}"
    server = (contextlib.nullcontext(None) if policy_url else
              common.bench_platform(latency_s, bench_latency.JITTER, seed=seed))
    with server as platform:
        env = platform.env() if platform is not None else {}
        if policy_url:
            overrides = {**overrides, "policy_url": policy_url}
        sim = NodeProcess("sim_robot", namespace=namespace, parameters=SIM, env=env,
                          log_path=os.path.join(tmp, "sim_robot.log"))
        node_process = NodeProcess("policy_node", namespace=namespace, params_files=[config_path("policy.yaml")],
                                   parameters={**NODE, **overrides},
                                   env=env,
                                   log_path=os.path.join(tmp, "policy_node.log"))
        spun = Spinning()
        planner = spun.create_node("bench_planner")
        commands: List[tuple] = []
        warming: List = []
        heard: Dict[str, int] = {}  # the simulated arm's topics, as the node will hear them
        try:
            for topic, kind in (("joint_states", JointState), ("cameras/exterior_1/image_raw", Image),
                                ("cameras/wrist_left/image_raw", Image)):
                planner.create_subscription(kind, f"{namespace}/{topic}",
                                            lambda _m, t=topic: heard.__setitem__(t, heard.get(t, 0) + 1),
                                            qos_profile_sensor_data)
            planner.create_subscription(Float64MultiArray, f"{namespace}/arm_controller/commands",
                                        lambda m: commands.append((time.monotonic(), list(m.data)[:7])),
                                        QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
            latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            planner.create_subscription(WarmingStatus, f"{namespace}/sequence_ai_policy/warming", warming.append,
                                        latched)
            act = ActionClient(planner, Act, f"{namespace}/sequence_ai_policy/act")
            spun.spin([planner], threads=2)
            if not common.wait_until(lambda: bool(warming) and warming[-1].ready, 90.0) or not node_process.running:
                return {"error": "the node never became ready: " + node_process.output()[-400:]}
            if not act.wait_for_server(timeout_sec=30.0):
                return {"error": "no act action server"}
            # the arm's cameras and joint states flowing for a moment first, as on a robot that is up
            if not common.wait_until(lambda: len(heard) == 3 and min(heard.values()) >= 15, 60.0):
                return {"error": f"the simulated arm's topics never all arrived ({heard}): " + sim.output()[-300:]}
            started = time.monotonic()
            goal = Act.Goal(instruction=bench_latency.INSTRUCTION, max_seconds=float(seconds), max_actions=0)
            sent = act.send_goal_async(goal)
            if not common.wait_until(sent.done, 30.0) or not sent.result().accepted:
                return {"error": "goal not accepted: " + node_process.output()[-400:]}
            answer = sent.result().get_result_async()
            if not common.wait_until(answer.done, seconds * 3 + 30):
                return {"error": "goal did not finish"}
            outcome = answer.result().result.outcome
        finally:
            spun.close()
            node_process.stop()
            sim.stop()
    if outcome.reason not in ("timeout", "completed"):  # e.g. stale_input: the machine starved the sim arm
        return {"error": f"the goal ended {outcome.reason} after {outcome.actions} actions: {outcome.message}"[:300]}
    moved = [(t - started, target) for t, target in commands if t >= started][: int(outcome.actions)]
    return figures(moved, outcome)


def figures(moved: List[tuple], outcome) -> Dict[str, object]:
    from sequence_ai.platform.policies import instruction_goal

    goal = instruction_goal(bench_latency.INSTRUCTION)
    run = bench_latency.figures({"actions": int(outcome.actions), "chunks": int(outcome.chunks),
                                 "underruns": int(outcome.underruns), "underrun_s": float(outcome.underrun_s),
                                 "elapsed_s": float(outcome.elapsed_s), "reason": outcome.reason,
                                 "log": [(t, None, target, None, None, None) for t, target in moved]}, goal)
    del run["age_p99_s"], run["lateness_p99_s"]  # the node's own figures instead, over every command played
    run.update({"age_p50_s": float(outcome.age_p50_s), "age_max_s": float(outcome.age_max_s),
                "lateness_p50_s": float(outcome.lateness_p50_s), "lateness_max_s": float(outcome.lateness_max_s)})
    return run


def summary(r: Dict[str, object]) -> str:
    if "error" in r:
        return f"error: {r['error']}"
    settle = "never" if r["settle_s"] is None else f"{r['settle_s']:.2f}s"
    return (f"{r['actions']} actions ({r['reason']}), held {r['held_share'] * 100:.1f}% ({r['underruns']} underruns), "
            f"{r['requests_per_s']:.2f} req/s, age p50 {r['age_p50_s']:.2f}s, lateness p50 {r['lateness_p50_s']:.2f}s, "
            f"largest step {r['step_ratio']:.2f}x median, settle {settle}, overshoot {r['overshoot_rad']:.3f} rad")


def measure(seconds: float = 20.0, latencies: Sequence[float] = (0.05, 0.6, 0.7, 0.8), log: Callable[..., None] = print,
            before: bool = True) -> List[Dict[str, object]]:
    """[{"latency_s", "node": figures, "node append": figures (above the window), "node before":
    figures (at 0.7 s, if `before`)}]; one case after another."""
    try:
        import rclpy  # noqa: F401

        import sequence_ai_ros.tools.processes  # noqa: F401
    except ImportError as exc:
        return [{"latency_s": latency, "node": {"error": f"ROS not importable ({exc})"}} for latency in latencies]
    out = []
    for index, latency in enumerate(latencies):
        entry: Dict[str, object] = {"latency_s": latency}
        planned = [("node", {}, 200)]
        if latency > bench_latency.WINDOW_S:
            planned.append(("node append", APPENDING, 400))
        if before and abs(latency - 0.7) < 1e-9:
            planned.append(("node before", BEFORE, 300))  # with take_over false, which lookahead 1 needs
        for name, overrides, seed in planned:
            entry[name] = result = case(latency, seconds, overrides, seed + index)
            log(f"  ros latency {latency:g}s {name}: {summary(result)}")
        out.append(entry)
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--latencies", default="0.05,0.6,0.7,0.8")
    args = parser.parse_args(argv)
    measure(args.seconds, [float(x) for x in args.latencies.split(",")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
