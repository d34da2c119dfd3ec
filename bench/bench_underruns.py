"""Underruns vs refill latency, ours vs the public 0.20.0 client, and client CPU per action.

    .venv/bin/python bench/bench_underruns.py [--actions 1000] [--latencies 0.1,0.3,0.5,0.7,0.9]

For each latency a local platform of its own whose worker spends latency ±20 % (uniform, seeded)
in the model (`bench_policy.delayed`, which logs every latency and the time it really slept). Both
clients run on that worker at the same time, each in a process of its own: a warm-up predict()
whose rows are drained, then run() for N actions at the model's 15 Hz, open-loop horizon 8, no-op robot. All latencies run
in parallel, so the whole sweep takes as long as its slowest run (physics unchanged: 15 Hz, real
seconds).

Physical minimum for a chunk-replacing client (one request in flight): a chunk covers
H/hz = 8/15 s of motion, and the next request can start at the earliest when that chunk starts to
play, so refill i stalls at least max(0, L_i − H/hz). Summed over the refills a run played, with
L_i the worker's own time on each request (its act log's `worker_ms`: arrival to answer, the
injected sleep included), that is the floor `underrun_s` is held to ("min_underrun_s"). The same
sum over the time the plug-in slept alone ("min_sleep_s") leaves out the worker's own handling too.
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

DRIVER = r'''
import json, sys, time, warnings
warnings.simplefilter("ignore")
import sequence_ai
frame_path, actions, tag, lookahead = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
data = open(frame_path).read()
def observation(instruction):
    return sequence_ai.Observation(
        images=[sequence_ai.ImageFrame(view=v, data=data) for v in ("exterior_1", "wrist_left")],
        proprioception=sequence_ai.Proprioception(joint_positions=[0.0] * 7, gripper=[0.0]),
        instruction=instruction)
obs = observation(tag)
with sequence_ai.connect("pi05-droid") as policy:
    policy.predict(observation("warmup " + tag))  # admission, TLS, catalogue: not measured
    for _ in range(policy.buffered):
        policy.next_action()  # drained: the run starts on an empty buffer (a blocking fill, no underrun)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    out = policy.run(observe=lambda: obs, act=lambda a: None, validate=lambda a: True, max_actions=actions,
                     progress=False, open_loop_horizon=8, **({"lookahead": lookahead} if lookahead > 1 else {}))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
print(json.dumps({"version": sequence_ai.__version__, "actions": out.actions, "chunks": out.chunks,
                  "underruns": out.underruns, "underrun_s": out.underrun_s, "cpu_s": cpu, "wall_s": wall,
                  "reason": out.reason}))
'''


def drive(python: str, env: Dict[str, str], frame_path: str, actions: int, tag: str, ours: bool,
          lookahead: int = 1) -> dict:
    env = dict(env)
    if ours:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), common.ROOT) if p)
    else:
        env.pop("PYTHONPATH", None)  # the peer must never import this checkout
    result = subprocess.run([python, "-c", DRIVER, frame_path, str(actions), tag, str(lookahead)], env=env,
                            capture_output=True,
                            text=True, cwd=tempfile.gettempdir(), timeout=900)
    if result.returncode != 0:
        return {"error": (result.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def physical_minimum(result: dict, latencies: List[float]) -> float:
    """Σ max(0, L_i − H/hz) over the refills the run played (see the module docstring)."""
    chunks = int(result.get("chunks", 0))
    played = latencies[:chunks]
    if chunks * HORIZON >= result.get("actions", 0) and played:
        played = played[1:]  # the run began with a blocking fill: the arm had not moved yet
    return sum(max(0.0, latency - WINDOW_S) for latency in played)


def measure(actions: int = 1000, latencies: Sequence[float] = (0.1, 0.3, 0.5, 0.7, 0.9),
            peer: Optional[str] = None, log=print, lookahead2_from_s: Optional[float] = None) -> List[dict]:
    """One row per latency: {"latency_s", "ours": result, "peer": result, "p99_latency_s"} (and
    "ours la=2", ours with two chunks in flight, at latencies ≥ lookahead2_from_s); each result has
    the outcome's counts plus "min_underrun_s" (the lookahead-1 floor) and "min_sleep_s"."""
    tmp = tempfile.mkdtemp(prefix="bench-underruns-")
    frame_path = os.path.join(tmp, "frame.b64")
    with open(frame_path, "w") as handle:
        handle.write(common.jpeg_b64())
    clients = [("ours", sys.executable, True, 1)] + ([("peer", peer, False, 1)] if peer else [])
    rows: List[dict] = []
    with ExitStack() as stack:
        platforms = []
        for index, latency in enumerate(latencies):
            log_path = os.path.join(tmp, f"policy-{latency:g}.log")
            platform = stack.enter_context(common.bench_platform(latency, JITTER, log_path, seed=index))
            platforms.append((latency, platform, log_path))
        runs = []
        for latency, platform, log_path in platforms:
            env = {**os.environ, **platform.env()}
            wanted = list(clients)
            if lookahead2_from_s is not None and latency >= lookahead2_from_s:
                wanted.append(("ours la=2", sys.executable, True, 2))
            runs += [(latency, log_path, env, *client) for client in wanted]
        with ThreadPoolExecutor(max_workers=len(runs)) as pool:  # every run at once
            jobs = [(latency, name, log_path, pool.submit(drive, python, env, frame_path, actions, f"bench {name}",
                                                          ours, lookahead))
                    for latency, log_path, env, name, python, ours, lookahead in runs]
            results: Dict[float, dict] = {}
            for latency, name, log_path, job in jobs:
                result = job.result()
                entry = results.setdefault(latency, {"latency_s": latency, "log": log_path})
                entry[name] = result
                log(f"  underruns: latency {latency:.1f}s {name:<9} {summary(result)}")
        from sequence_ai.platform.state import ACT_LOG_SIZE  # importable once `common` set the path

        for latency, platform, _ in platforms:  # the worker's own time on every request
            results[latency]["requests"] = platform.requests(limit=ACT_LOG_SIZE)
    for latency in latencies:
        entry = results[latency]
        calls = sorted(common.read_log(entry.pop("log")), key=lambda c: c["time"])
        requests = sorted(entry.pop("requests"), key=lambda r: r["time"])
        entry["p99_latency_s"] = common.percentile([c["latency_s"] for c in calls], 99)
        for name in [n for n in entry if n.startswith(("ours", "peer"))]:
            result = entry[name]
            if "error" in result:
                continue
            tag = f"bench {name}"
            served = [r["worker_ms"] / 1000.0 for r in requests if r["instruction"] == tag and r["status"] == 200]
            slept = [c.get("slept_s", c["latency_s"]) for c in calls if c["instruction"] == tag]
            result["min_underrun_s"] = physical_minimum(result, served)
            result["min_sleep_s"] = physical_minimum(result, slept)
        rows.append(entry)
    return rows


def summary(result: dict) -> str:
    if "error" in result:
        return f"error: {result['error']}"
    return (f"{result['actions']} actions, {result['underruns']} underruns ({result['underrun_s']:.2f}s), "
            f"{result['cpu_s'] / max(1, result['actions']) * 1000:.3f} ms CPU/action, {result['reason']}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actions", type=int, default=1000)
    parser.add_argument("--latencies", default="0.1,0.3,0.5,0.7,0.9")
    parser.add_argument("--ours-only", action="store_true")
    parser.add_argument("--lookahead2", action="store_true", help="also ours with lookahead=2 at every latency")
    args = parser.parse_args(argv)
    peer = None if args.ours_only else common.peer_python()
    rows = measure(args.actions, [float(x) for x in args.latencies.split(",")], peer,
                   lookahead2_from_s=0.0 if args.lookahead2 else None)
    print_table(rows)
    return 0


def _ratio(ours: float, peer: float) -> str:
    if peer > 0:
        return f"{ours / peer:.2f}"
    return "—" if ours == 0 else "inf"


def print_table(rows: List[dict]) -> None:
    """One line per client and latency; the `÷ peer` columns compare each of ours with the public
    client on the same worker in the same run."""
    print(f"{'latency':>8} {'client':<9} {'underruns':>9} {'stall s':>8} {'min s':>7} {'sleep min':>9} {'÷ peer':>7} "
          f"{'cpu ms/act':>10} {'÷ peer':>7}")
    for row in rows:
        peer = row.get("peer")
        peer = peer if peer is not None and "error" not in peer else None
        for name in ("ours", "peer", "ours la=2"):
            r = row.get(name)
            if r is None or "error" in r:
                continue
            cpu = r["cpu_s"] / max(1, r["actions"]) * 1000
            stall_ratio = cpu_ratio = ""
            if peer is not None and name != "peer":
                stall_ratio = _ratio(r["underrun_s"], peer["underrun_s"])
                cpu_ratio = _ratio(cpu, peer["cpu_s"] / max(1, peer["actions"]) * 1000)
            print(f"{row['latency_s']:>7.1f}s {name:<9} {r['underruns']:>9} {r['underrun_s']:>8.2f} "
                  f"{r['min_underrun_s']:>7.2f} {r['min_sleep_s']:>9.2f} {stall_ratio:>7} {cpu:>10.3f} {cpu_ratio:>7}")

if __name__ == "__main__":
    sys.exit(main())
