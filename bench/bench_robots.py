"""Concurrent robots in one host: separate Policy objects at 15 Hz on one worker, and what each
action costs as their number grows.

    .venv/bin/python bench/bench_robots.py [--robots 1,2,4,8,16,24] [--seconds 8] [--latency 0.15]

One process drives N robots, each a Policy of its own on a thread of its own (run() with a
no-op robot and a prebuilt two-view observation), against one worker that spends the latency
±20 % per request. Each step runs all N for the same number of seconds; the ramp stops at the
first step whose underruns per 1000 actions exceed the one-robot step's by more than one
(`rose`). CPU per action is the whole process's process_time() over all robots' actions.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import warnings
from typing import Callable, Dict, List, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

HZ = 15.0


def step(platform, robots: int, seconds: float) -> Dict[str, float]:
    """Run `robots` Policies at once; totals of their outcomes."""
    import sequence_ai

    data = common.jpeg_b64()
    obs = sequence_ai.Observation(
        images=[sequence_ai.ImageFrame(view=v, data=data) for v in ("exterior_1", "wrist_left")],
        proprioception=sequence_ai.Proprioception(joint_positions=[0.0] * 7, gripper=[0.0]),
        instruction="pick up the cup")
    env = platform.env()
    outcomes: List = []
    errors: List[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        policies = [sequence_ai.connect("pi05-droid", base_url=env["SEQUENCES_BASE_URL"],
                                        api_key=env["SEQUENCES_API_KEY"]) for _ in range(robots)]
        try:
            for policy in policies:
                policy.predict(obs)  # admission and TLS outside the measurement
            actions = int(seconds * HZ)

            def drive(policy) -> None:
                try:
                    outcomes.append(policy.run(observe=lambda: obs, act=lambda a: None, validate=lambda a: True,
                                               max_actions=actions, progress=False))
                except Exception as exc:
                    errors.append(f"{type(exc).__name__}: {exc}")

            threads = [threading.Thread(target=drive, args=(p,), daemon=True) for p in policies]
            cpu0, wall0 = time.process_time(), time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(seconds * 4 + 30)
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        finally:
            for policy in policies:
                policy.close()
    done = sum(o.actions for o in outcomes)
    underruns = sum(o.underruns for o in outcomes)
    return {"robots": robots, "actions": done, "underruns": underruns,
            "underrun_s": sum(o.underrun_s for o in outcomes), "cpu_s": cpu, "wall_s": wall,
            "cpu_ms_per_action": cpu / max(1, done) * 1000.0,
            "underruns_per_1000": underruns / max(1, done) * 1000.0, "errors": len(errors)}


def measure(robot_counts: Sequence[int] = (1, 2, 4, 8, 16, 24), seconds: float = 8.0, latency_s: float = 0.15,
            log: Callable[..., None] = print) -> List[Dict[str, float]]:
    """One dict per step run; each has "rose" (underruns above the one-robot step's)."""
    steps: List[Dict[str, float]] = []
    with common.bench_platform(latency_s, 0.2) as platform:
        for robots in robot_counts:
            result = step(platform, robots, seconds)
            baseline = steps[0]["underruns_per_1000"] if steps else result["underruns_per_1000"]
            result["rose"] = bool(result["errors"]) or result["underruns_per_1000"] > baseline + 1.0
            steps.append(result)
            log(f"  robots {robots:>2}: {result['actions']} actions, {result['underruns']} underruns "
                f"({result['underrun_s']:.2f}s), {result['cpu_ms_per_action']:.3f} ms CPU/action, "
                f"{result['errors']} errors{'  <- underruns rose' if result['rose'] else ''}")
            if result["rose"]:
                break
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--robots", default="1,2,4,8,16,24")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--latency", type=float, default=0.15)
    args = parser.parse_args()
    measure([int(x) for x in args.robots.split(",")], args.seconds, args.latency)
    return 0


if __name__ == "__main__":
    sys.exit(main())
