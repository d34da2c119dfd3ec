"""The policy node at pi05-droid's real latency on the physical arm: sim_robot with `physics: mujoco`
(a MuJoCo Panda whose servos lag), judged on what the arm MEASURES.

    scripts/workspace.sh run .venv/bin/python -P bench/bench_physics_node.py [--seconds 20]

As bench_ros_latency.py (a local platform serving the stand-in behind 0.7 s ±20 %, the policy node
with config/policy.yaml, the arm, each in a process of its own; this process is the planner), with
the physical arm at its default camera rate and size (sim_robot.py: PHYSICS_CAMERA_HZ, 320×180).
Cases: the node's defaults and the appending rule (`take_over: false`), toward the instruction's
fixed goal and toward the sweeping one. Per command as the planner receives it: the target, and
the joints the arm measured at the moment the node published it (the DDS source timestamp),
interpolated on the joint states' own stamps; the figures are bench_physics.figures', with age and
lateness p50 from the goal's RunOutcome.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_physics
import common

# input ages as the tests' harness widens them: the physical arm renders at 3 Hz, and a machine shared
# with other work was seen to hold a render, and the joint states, past 1 s
NODE = {"startup_timeout_s": 60.0, "max_image_age_s": 2.0, "max_joint_state_age_s": 2.0}
CASES = (("node", {}), ("node append", {"take_over": False}))


def case(seconds: float, overrides: Dict[str, object], seed: int, sweep: bool,
         physics: str = "mujoco") -> Dict[str, object]:
    from rclpy.action import ActionClient
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
    from sensor_msgs.msg import JointState
    from sequence_ai_ros.action import Act
    from sequence_ai_ros.msg import WarmingStatus
    from std_msgs.msg import Float64MultiArray

    from sequence_ai.platform.policies import instruction_goal, sweep_goal
    from sequence_ai_ros.spinning import Spinning
    from sequence_ai_ros.tools.processes import NodeProcess, config_path, ros_environment

    os.environ.update({k: v for k, v in ros_environment().items() if k.startswith(("ROS_", "RMW_", "FASTRTPS_"))})
    tmp = tempfile.mkdtemp(prefix="bench-physics-node-")
    ns = f"/physical_arm_{os.getpid()}_{seed}"
    with common.bench_platform(bench_physics.LATENCY, bench_physics.JITTER, seed=seed,
                               stand_in="sweeping" if sweep else "") as platform:
        sim = NodeProcess("sim_robot", namespace=ns, parameters={"physics": physics}, env=platform.env(),
                          log_path=os.path.join(tmp, "sim_robot.log"))
        node = NodeProcess("policy_node", namespace=ns, params_files=[config_path("policy.yaml")],
                           parameters={**NODE, **overrides}, env=platform.env(),
                           log_path=os.path.join(tmp, "policy_node.log"))
        spun = Spinning()
        planner = spun.create_node("bench_physics_planner")
        commands: List[tuple] = []  # (monotonic arrival, wall clock when the node published it, target)
        measured: List[tuple] = []  # (stamp: the wall-clock moment of the physics state, joints)
        warming: List = []
        try:
            planner.create_subscription(JointState, f"{ns}/joint_states",
                                        lambda m: measured.append((m.header.stamp.sec + m.header.stamp.nanosec * 1e-9,
                                                                   list(m.position)[:7])),
                                        qos_profile_sensor_data)
            planner.create_subscription(Float64MultiArray, f"{ns}/arm_controller/commands",
                                        lambda m, info: commands.append((time.monotonic(), info["source_timestamp"] * 1e-9,
                                                                         list(m.data)[:7])),
                                        QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
            latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            planner.create_subscription(WarmingStatus, f"{ns}/sequence_ai_policy/warming", warming.append, latched)
            act = ActionClient(planner, Act, f"{ns}/sequence_ai_policy/act")
            spun.spin([planner], threads=2)
            if not common.wait_until(lambda: bool(warming) and warming[-1].ready, 90.0) or not node.running:
                return {"error": "the node never became ready: " + node.output()[-400:]}
            if not act.wait_for_server(timeout_sec=30.0) or not common.wait_until(lambda: len(measured) > 100, 60.0):
                return {"error": "no act server or no joint states: " + sim.output()[-300:]}
            started = time.monotonic()
            sent = act.send_goal_async(Act.Goal(instruction=bench_physics.INSTRUCTION, max_seconds=float(seconds)))
            if not common.wait_until(sent.done, 30.0) or not sent.result().accepted:
                return {"error": "goal not accepted: " + node.output()[-400:]}
            answer = sent.result().get_result_async()
            if not common.wait_until(answer.done, seconds * 3 + 30):
                return {"error": "goal did not finish"}
            outcome = answer.result().result.outcome
        finally:
            spun.close()
            node.stop()
            sim.stop()
    if outcome.reason not in ("timeout", "completed"):
        return {"error": f"the goal ended {outcome.reason} after {outcome.actions} actions: {outcome.message}"[:300]}
    import numpy as np

    played = [c for c in commands if c[0] >= started][: int(outcome.actions)]
    stamps = np.array([m[0] for m in measured])
    joints = np.array([m[1] for m in measured])
    # the arm where it was when the node published each command, on the arm's own stamps: on a busy
    # machine messages arrive here in bursts, which arrival times would show as steps of the arm
    log = [(t - started, wall, target, [float(np.interp(wall, stamps, joints[:, j])) for j in range(7)], None, None)
           for t, wall, target in played]
    run = {"actions": int(outcome.actions), "chunks": int(outcome.chunks), "underruns": int(outcome.underruns),
           "underrun_s": float(outcome.underrun_s), "elapsed_s": float(outcome.elapsed_s), "log": log}
    if sweep:
        run = bench_physics.figures(run, moving=lambda w: sweep_goal(bench_physics.INSTRUCTION, w),
                                    from_s=min(bench_physics.SWEEP_FROM_S, seconds / 2))
    else:
        run = bench_physics.figures(run, goal=instruction_goal(bench_physics.INSTRUCTION))
    run.update({"age_p50_s": float(outcome.age_p50_s), "lateness_p50_s": float(outcome.lateness_p50_s)})
    return run


def measure(seconds: float = 20.0, log: Callable[..., None] = print, quick: bool = False,
            physics: str = "mujoco", kinds: Sequence[str] = ("fixed", "sweep")) -> dict:
    """{"fixed": {case: figures}, "sweep": {case: figures}, "seconds"}; one case after another
    (`quick`: the node's defaults toward the fixed goal only; `physics: kinematic`, the same on the
    kinematic arm, for comparison)."""
    try:
        import rclpy  # noqa: F401
    except ImportError as exc:
        return {"error": f"ROS not importable ({exc})"}
    out: dict = {"fixed": {}, "sweep": {}, "seconds": seconds}
    for kind in ("fixed",) if quick else kinds:
        for index, (name, overrides) in enumerate(CASES[:1] if quick else CASES):
            out[kind][name] = result = case(seconds, overrides, 500 + index + (10 if kind == "sweep" else 0),
                                            kind == "sweep", physics)
            log(f"  {physics} arm through the node, {kind:>5} {name:<12} {bench_physics.summary(result)}")
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--physics", default="mujoco", choices=("mujoco", "kinematic"),
                        help="sim_robot's physics (kinematic: the same cases on the kinematic arm, for comparison)")
    parser.add_argument("--kinds", default="fixed,sweep", help="which goals: fixed, sweep or both")
    args = parser.parse_args(argv)
    from run_all import markdown_table

    result = measure(args.seconds, physics=args.physics, kinds=args.kinds.split(","))
    print(markdown_table(bench_physics.node_rows(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
