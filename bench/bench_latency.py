"""Fresh and smooth at the platform's real latency: held time, requests, age and lateness, seams,
the closed loop, a moving goal, instruction swaps and the request budget.

    .venv/bin/python bench/bench_latency.py [--seconds 40] [--latencies 0.05,0.6,0.7,0.8] [--ours-only]

pi05-droid's window is W = 8 rows at 15 Hz = 0.533 s, its chunk H = 15 rows, and its warm latency
0.6–0.8 s: above the window. Every run drives a kinematic position-controlled arm from the sim arm's
home pose (`latency_driver.py`, a process of its own), all at once; each latency (±20 %, uniform,
seeded) has a local platform of its own serving the stand-in behind that delay
(`bench_policy.delayed`). The clients, per latency:

* ours        — `run()` with its defaults;
* ours append — the appending rule, each chunk appended behind the rows buffered (`take_over=False`);
* ours la=1   — `run(lookahead=1, stitch="none")`: this client before pipelining (stop and go);
* peer        — the public sequence-ai 0.20.0 with its defaults.

At 0.7 s also: the same clients on a platform whose stand-in's goal sweeps (`policies.sweeping`),
for the RMS distance between the arm and the moving goal; ours (and the appending rule) with four
set_instruction() swaps, for the instruction lag. At each latency above the window also ours at the
budgets of `budgets()` (`request_budget=`), for the budget curve: for the full length at 0.7 s (the
goal's latency), for `OTHER_BUDGET_SHARE` of it at the others (every run is a process of its own and
they all run at once on the machine's cores: fewer seconds there spare the runs beside them).

Per run: held share (underrun_s / elapsed), requests per second of motion (chunks over actions/hz),
the age of the observation behind each action when acted, the lateness of each row (when it played
− the moment it was for, `latency_driver.py`), the largest step between consecutive targets against
the median step while moving, and with the fixed goal the time until every joint is and stays within
0.02 rad of it ("settle") and the largest overshoot past it along each joint's approach.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

HZ, HORIZON, ROWS, JITTER = 15.0, 8, 15, 0.2
WINDOW_S, CHUNK_S = HORIZON / HZ, ROWS / HZ
HOME = [0.0, -0.5, 0.0, -2.2, 0.0, 1.8, 0.8]  # sequence_ai_ros/tools/sim_robot.py
SETTLE_RAD = 0.02
INSTRUCTION = "put the red block in the bowl"
SWAPPED_TO = "open the top drawer"
APPENDING = {"take_over": False}  # the appending rule, kept reachable for the comparison
STOP_AND_GO = {"lookahead": 1, "stitch": "none"}
REAL = 0.7  # the latency of the moving goal, the swaps and the budget curve's goal
OTHER_BUDGET_SHARE = 0.5  # of the run's seconds, for the budget curve at the latencies other than REAL
SWEEP_FROM_S = 10.0  # the arm has reached the sweep from home by then: RMS over the rest of the run
DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "latency_driver.py")


def budgets(latency: float) -> List[float]:
    """The budget curve's budgets at `latency` (requests/s): two above the default's one per window
    (1.875/s), and the issue's goal point 1/(H/hz − 1.2·L) where there is one (1.2·L < H/hz). The
    client never has more than `MAX_IN_FLIGHT_BUDGET` (8) requests in flight, so a budget above 8/L
    (the goal point at 0.8 s: 25/s) is spent at about 8/L."""
    from sequence_ai._loop._budget import budget_for_lateness

    point = budget_for_lateness(latency, CHUNK_S)
    return sorted({2.5, 4.0} | ({point} if point is not None else set()))


@dataclass
class Case:
    platform: str  # which platform serves it: the latency, or "sweep"
    latency: float
    name: str
    ours: bool
    kwargs: Dict[str, object] = field(default_factory=dict)
    seconds: float = 40.0
    swaps: List[list] = field(default_factory=list)


def cases(seconds: float, latencies: Sequence[float], peer: Optional[str], swap_seconds: float) -> List[Case]:
    clients = [("ours", True, {}), ("ours append", True, APPENDING), ("ours la=1", True, STOP_AND_GO)]
    clients += [("peer", False, {})] if peer else []
    out = [Case(f"{latency:g}", latency, name, ours, kwargs, seconds) for latency in latencies
           for name, ours, kwargs in clients]
    if REAL in latencies:
        out += [Case("sweep", REAL, name, ours, kwargs, seconds) for name, ours, kwargs in clients
                if name != "ours la=1"]
        swaps = [[swap_seconds * (i + 1) / 5, SWAPPED_TO if i % 2 == 0 else INSTRUCTION] for i in range(4)]
        out += [Case(f"{REAL:g}", REAL, f"{name} swaps", True, kwargs, swap_seconds, swaps)
                for name, ours, kwargs in clients if name in ("ours", "ours append")]
    for latency in (x for x in latencies if x > WINDOW_S):
        length = seconds if latency == REAL else seconds * OTHER_BUDGET_SHARE
        out += [Case(f"{latency:g}", latency, f"budget {b:g}", True, {"request_budget": b}, length)
                for b in budgets(latency)]
    return out


def drive(python: str, env: Dict[str, str], frame_path: str, case: Case) -> dict:
    env = dict(env)
    if case.ours:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), common.ROOT) if p)
    else:
        env.pop("PYTHONPATH", None)  # the peer must never import this checkout
    spec = {"seconds": case.seconds, "instruction": INSTRUCTION, "home": HOME, "kwargs": case.kwargs,
            "swaps": case.swaps, "hz": HZ}
    result = subprocess.run([python, DRIVER, frame_path, json.dumps(spec)], env=env, capture_output=True, text=True,
                            cwd=tempfile.gettempdir(), timeout=900)
    if result.returncode != 0:
        return {"error": (result.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def figures(result: dict, goal: Optional[Sequence[float]] = None,
            moving: Optional[Callable[[float], Sequence[float]]] = None, from_s: float = SWEEP_FROM_S) -> dict:
    """The figures of one run from its log of (t, wall clock, target, age, lateness, lag): against
    a fixed `goal` (settle, overshoot) or a `moving` one (its position at a wall-clock time: RMS
    from `from_s` into the run on)."""
    if "error" in result:
        return result
    log = result.pop("log")
    targets = [entry[2] for entry in log]
    steps = [max(abs(a - b) for a, b in zip(p, q)) for p, q in zip(targets, targets[1:])]
    moving_steps = [s for s in steps if s > 1e-4]
    median = common.percentile(moving_steps, 50) if moving_steps else 0.0
    ages = [entry[3] for entry in log if entry[3] is not None]
    late = [entry[4] for entry in log if entry[4] is not None]
    motion_s = result["actions"] / HZ
    result.update({
        "held_share": result["underrun_s"] / result["elapsed_s"] if result["elapsed_s"] > 0 else float("nan"),
        "requests_per_s": result["chunks"] / motion_s if motion_s > 0 else float("nan"),
        "age_p50_s": common.percentile(ages, 50), "age_p99_s": common.percentile(ages, 99),
        "lateness_p50_s": common.percentile(late, 50), "lateness_p99_s": common.percentile(late, 99),
        "max_step": max(steps) if steps else 0.0, "median_step": median,
        "step_ratio": (max(steps) / median) if median > 0 else float("nan"),
        "lags_s": [entry[5] for entry in log if entry[5] is not None],
    })
    if goal is not None:
        result.update(closed_loop(log, goal))
    ticks = in_force(log)
    forced_ages = [age for _, _, _, age in ticks if age is not None]
    result["age_in_force_p50_s"] = common.percentile(forced_ages, 50) if forced_ages else float("nan")
    if moving is not None:
        # every control tick, the held ones too: a client that stands still while the goal moves on
        # is judged by where it stands, not only by the ticks it moved
        errors = [(q - g) ** 2 for t, wall, target, _ in ticks if t >= from_s for q, g in zip(target, moving(wall))]
        result["rms_rad"] = math.sqrt(sum(errors) / len(errors)) if errors else float("nan")
        result["rms_from_s"] = from_s
    return result


def in_force(log: list, hz: float = HZ) -> List[tuple]:
    """(t, wall clock, target, age) at every control tick from the run's first action to its last:
    the action played at that tick, or, where the client played none (it held), the one before it,
    which holds the arm and ages meanwhile. An action counts for the tick it is nearest to."""
    if not log:
        return []
    ticks, index, first = [], 0, log[0][0]
    for k in range(round((log[-1][0] - first) * hz) + 1):
        t = first + k / hz
        while index + 1 < len(log) and log[index + 1][0] <= t + 0.5 / hz:
            index += 1
        played_at, wall, target, age = log[index][:4]
        since = max(0.0, t - played_at)
        ticks.append((t, None if wall is None else wall + since, target, None if age is None else age + since))
    return ticks


def closed_loop(log: list, goal: Sequence[float]) -> dict:
    """Settle (the time from run() until every joint is and stays within SETTLE_RAD of `goal`) and
    the largest overshoot past it along each joint's approach from home."""
    direction = [1.0 if g >= h else -1.0 for g, h in zip(goal, HOME)]
    overshoot = max([0.0] + [d * (q - g) for entry in log for q, g, d in zip(entry[2], goal, direction)])
    settle = log[0][0] if log else None
    for index in range(len(log) - 1, -1, -1):
        if max(abs(q - g) for q, g in zip(log[index][2], goal)) > SETTLE_RAD:
            settle = log[index + 1][0] if index + 1 < len(log) else None
            break
    return {"settle_s": settle, "overshoot_rad": overshoot}


def measure(seconds: float = 40.0, latencies: Sequence[float] = (0.05, 0.6, 0.7, 0.8), peer: Optional[str] = None,
            log=print, swap_seconds: float = 20.0) -> dict:
    """{"latencies": [{"latency_s", client name: figures, ...}], "sweep": {client: figures},
    "swaps": {client: figures}, "budgets": {latency: {budget: figures}} (the latencies above the window)}."""
    from sequence_ai.platform.policies import instruction_goal, sweep_goal  # importable once `common` set the path

    goal = instruction_goal(INSTRUCTION)
    tmp = tempfile.mkdtemp(prefix="bench-latency-")
    frame_path = os.path.join(tmp, "frame.b64")
    with open(frame_path, "w") as handle:
        handle.write(common.jpeg_b64())
    planned = cases(seconds, latencies, peer, swap_seconds)
    out: dict = {"latencies": [{"latency_s": latency} for latency in latencies], "sweep": {}, "swaps": {},
                 "budgets": {}}
    with ExitStack() as stack:
        envs = {}
        for index, key in enumerate(dict.fromkeys(case.platform for case in planned)):
            sweep = key == "sweep"
            latency = REAL if sweep else float(key)
            platform = stack.enter_context(common.bench_platform(latency, JITTER, seed=100 + index,
                                                                 stand_in="sweeping" if sweep else ""))
            envs[key] = {**os.environ, **platform.env()}
        log(f"  {len(planned)} runs at once, the longest {max(case.seconds for case in planned):g} s")
        with ThreadPoolExecutor(max_workers=len(planned)) as pool:  # every run at once
            jobs = [(case, pool.submit(drive, sys.executable if case.ours else peer, envs[case.platform], frame_path,
                                       case)) for case in planned]
            for case, job in jobs:
                raw = job.result()
                if case.platform == "sweep":
                    result = out["sweep"][case.name] = figures(raw, moving=lambda t: sweep_goal(INSTRUCTION, t),
                                                               from_s=min(SWEEP_FROM_S, case.seconds / 2))
                elif case.swaps:
                    result = out["swaps"][case.name.replace(" swaps", "")] = figures(raw)
                elif case.name.startswith("budget "):
                    result = out["budgets"].setdefault(case.latency, {})[case.kwargs["request_budget"]] = figures(raw)
                else:
                    entry = out["latencies"][list(latencies).index(case.latency)]
                    result = entry[case.name] = figures(raw, goal)
                log(f"  latency {case.latency:.2f}s {case.platform:>5} {case.name:<17} {summary(result)}")
    return out


def summary(r: dict) -> str:
    if "error" in r:
        return f"error: {r['error']}"
    text = (f"{r['actions']} actions, held {r['held_share'] * 100:.1f}% ({r['underruns']} underruns), "
            f"{r['requests_per_s']:.2f} req/s, age p50 {r['age_p50_s']:.2f}s, lateness p50 {r['lateness_p50_s']:.2f}s, "
            f"largest step {r['step_ratio']:.2f}x median")
    if "settle_s" in r:
        settle = "never" if r["settle_s"] is None else f"{r['settle_s']:.2f}s"
        text += f", settle {settle}, overshoot {r['overshoot_rad']:.3f} rad"
    if "rms_rad" in r:
        text += f", RMS from the moving goal {r['rms_rad']:.3f} rad"
    if r.get("lags_s"):
        text += f", instruction lags {', '.join(f'{lag:.2f}' for lag in r['lags_s'])} s"
    return text


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
