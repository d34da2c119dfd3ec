"""Smooth at the platform's real latency: held time, requests, observation age, seams, closed loop.

    .venv/bin/python bench/bench_latency.py [--seconds 40] [--latencies 0.05,0.6,0.7,0.8] [--ours-only]

pi05-droid's window is 8 rows at 15 Hz = 0.533 s and its warm latency 0.6–0.8 s: above the
window. For each latency (±20 %, uniform, seeded) a local platform of its own serves the stand-in
policy behind that delay (`bench_policy.delayed`), and each client drives a kinematic
position-controlled arm on it, in a process of its own, all at once:

* ours      — `run()` with its defaults (pipelined requests, stitched chunks);
* ours la=1 — `run(lookahead=1, stitch="none")`, this client before pipelining (stop and go);
* peer      — the public sequence-ai 0.20.0 with its defaults.

The arm starts at the sim arm's home pose; the stand-in moves toward the goal its instruction
hashes to, so the run is closed loop: each observation carries the joints the commands produced.
Rows are joint_delta displacements; a target is `q_ref + row` with `q_ref` the joints of the
observation the row's chunk came from (ours: the `q_ref` each row carries; the peer: the joints of
the observation that went with the chunk's request, in order).

Per run: held share (underrun_s / elapsed), requests per second of motion (chunks over actions/hz;
the least a window allows is 1/W = 1.875), the age of the observation behind each action when it
is acted (p50, p99), the largest step between consecutive targets against the median step while
moving, and in the closed loop the time until every joint is and stays within 0.02 rad of the
goal ("settle") and the largest overshoot past the goal along each joint's approach.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from typing import Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

HZ, HORIZON, JITTER = 15.0, 8, 0.2
WINDOW_S = HORIZON / HZ
HOME = [0.0, -0.5, 0.0, -2.2, 0.0, 1.8, 0.8]  # sequence_ai_ros/sim_robot.py
SETTLE_RAD = 0.02
INSTRUCTION = "put the red block in the bowl"

DRIVER = r'''
import json, sys, time, warnings
warnings.simplefilter("ignore")
import sequence_ai
frame_path, seconds, tag, kwargs, home = sys.argv[1], float(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4]), json.loads(sys.argv[5])
data = open(frame_path).read()
q = list(home)
observed = []          # (monotonic time, joints) of every observe(), in order
chunk_refs = []        # the peer: joints of the observation behind each installed chunk
log = []               # (time, target) of every act
ages = []
def observe():
    observed.append((time.monotonic(), list(q)))
    return sequence_ai.Observation(
        images=[sequence_ai.ImageFrame(view=v, data=data) for v in ("exterior_1", "wrist_left")],
        proprioception=sequence_ai.Proprioception(joint_positions=list(q), gripper=[0.0]), instruction=tag)
def on_chunk(chunk):
    chunk_refs.append(observed[len(chunk_refs)])
def act(action):
    global q
    now = time.monotonic()
    ref = getattr(action, "q_ref", None)
    if ref is None:  # the peer (or a predict() row): the chunk's observation, by order
        at, ref = chunk_refs[-1] if chunk_refs else (None, home)
    else:
        at = action.observed_at
    q = [r + d for r, d in zip(ref, action[:7])]
    log.append((now, q))
    if at is not None:
        ages.append(now - at)
with sequence_ai.connect("pi05-droid") as policy:
    policy.predict(observe())  # admission, TLS, catalogue: not measured
    observed.clear()
    for _ in range(policy.buffered):
        policy.next_action()   # drain: the measured run starts from an empty buffer at home
    started = time.monotonic()
    out = policy.run(observe=observe, act=act, validate=lambda a: True, max_actions=int(seconds * 15),
                     on_chunk=on_chunk, progress=False, open_loop_horizon=8, **kwargs)
print(json.dumps({"actions": out.actions, "chunks": out.chunks, "underruns": out.underruns,
                  "underrun_s": out.underrun_s, "elapsed_s": out.elapsed_s, "reason": out.reason,
                  "ages": ages, "log": [(t - started, target) for t, target in log]}))
'''

CLIENTS = (("ours", True, {}), ("ours la=1", True, {"lookahead": 1, "stitch": "none"}), ("peer", False, {}))


def drive(python: str, env: Dict[str, str], frame_path: str, seconds: float, ours: bool, kwargs: dict) -> dict:
    env = dict(env)
    if ours:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), common.ROOT) if p)
    else:
        env.pop("PYTHONPATH", None)  # the peer must never import this checkout
    result = subprocess.run([python, "-c", DRIVER, frame_path, str(seconds), INSTRUCTION, json.dumps(kwargs),
                             json.dumps(HOME)], env=env, capture_output=True, text=True,
                            cwd=tempfile.gettempdir(), timeout=900)
    if result.returncode != 0:
        return {"error": (result.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def figures(result: dict, goal: Sequence[float]) -> dict:
    """The figures of one run (see the module docstring) from its raw log."""
    if "error" in result:
        return result
    log = result.pop("log")
    ages = result.pop("ages")
    targets = [target for _, target in log]
    steps = [max(abs(a - b) for a, b in zip(p, q)) for p, q in zip(targets, targets[1:])]
    moving = [s for s in steps if s > 1e-4]
    median = common.percentile(moving, 50) if moving else 0.0
    direction = [1.0 if g >= h else -1.0 for g, h in zip(goal, HOME)]
    overshoot = max([0.0] + [d * (q - g) for target in targets for q, g, d in zip(target, goal, direction)])
    settle = None
    for index in range(len(log) - 1, -1, -1):
        if max(abs(q - g) for q, g in zip(log[index][1], goal)) > SETTLE_RAD:
            settle = log[index + 1][0] if index + 1 < len(log) else None
            break
    else:
        settle = log[0][0] if log else None
    motion_s = result["actions"] / HZ
    result.update({
        "held_share": result["underrun_s"] / result["elapsed_s"] if result["elapsed_s"] > 0 else float("nan"),
        "requests_per_s": result["chunks"] / motion_s if motion_s > 0 else float("nan"),
        "age_p50_s": common.percentile(ages, 50), "age_p99_s": common.percentile(ages, 99),
        "max_step": max(steps) if steps else 0.0, "median_step": median,
        "step_ratio": (max(steps) / median) if median > 0 else float("nan"),
        "settle_s": settle, "overshoot_rad": overshoot,
    })
    return result


def measure(seconds: float = 40.0, latencies: Sequence[float] = (0.05, 0.6, 0.7, 0.8), peer: Optional[str] = None,
            log=print) -> List[dict]:
    """One entry per latency: {"latency_s", "ours": figures, "ours la=1": ..., "peer": ...}."""
    from sequence_ai.platform.policies import instruction_goal  # importable once `common` set the path

    goal = instruction_goal(INSTRUCTION)
    tmp = tempfile.mkdtemp(prefix="bench-latency-")
    frame_path = os.path.join(tmp, "frame.b64")
    with open(frame_path, "w") as handle:
        handle.write(common.jpeg_b64())
    clients = [(name, sys.executable if ours else peer, ours, kwargs) for name, ours, kwargs in CLIENTS
               if ours or peer]
    entries: Dict[float, dict] = {}
    with ExitStack() as stack:
        runs = []
        for index, latency in enumerate(latencies):
            platform = stack.enter_context(common.bench_platform(latency, JITTER, seed=100 + index))
            env = {**os.environ, **platform.env()}
            runs += [(latency, env, *client) for client in clients]
        with ThreadPoolExecutor(max_workers=len(runs)) as pool:  # every run at once
            jobs = [(latency, name, pool.submit(drive, python, env, frame_path, seconds, ours, kwargs))
                    for latency, env, name, python, ours, kwargs in runs]
            for latency, name, job in jobs:
                result = figures(job.result(), goal)
                entries.setdefault(latency, {"latency_s": latency})[name] = result
                log(f"  latency {latency:.2f}s {name:<9} {summary(result)}")
    return [entries[latency] for latency in latencies]


def summary(r: dict) -> str:
    if "error" in r:
        return f"error: {r['error']}"
    settle = "never" if r["settle_s"] is None else f"{r['settle_s']:.2f}s"
    return (f"{r['actions']} actions, held {r['held_share'] * 100:.1f}% ({r['underruns']} underruns), "
            f"{r['requests_per_s']:.2f} req/s, age p50 {r['age_p50_s']:.2f}s p99 {r['age_p99_s']:.2f}s, "
            f"largest step {r['step_ratio']:.2f}x median, settle {settle}, overshoot {r['overshoot_rad']:.3f} rad")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--latencies", default="0.05,0.6,0.7,0.8")
    parser.add_argument("--ours-only", action="store_true")
    args = parser.parse_args(argv)
    peer = None if args.ours_only else common.peer_python()
    measure(args.seconds, [float(x) for x in args.latencies.split(",")], peer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
