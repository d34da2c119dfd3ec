"""What the take-over and the request budget should give, before the loop uses them: a simulation.

    .venv/bin/python bench/sim_takeover.py [--latencies 0.6,0.7,0.8] [--budgets default,2.5,4,6.25] [--seconds 120]

The control loop's timing on a simulated clock, with the client's own pure rules: the latency
estimate (`RefillLatency`), the stitcher (`Stitcher`, appending as today), the take-over
(`take_over`, `rows_to_keep`) and the budget (`request_due`). 15 Hz, 15-row chunks, an 8-row
window; each request's latency drawn uniformly within ±20 % (seeded), its observation taken when it
starts, its answer taken in at the first tick after it lands, in the order asked. No network, no
threads: what the rules themselves give, for phase B to meet in `make bench`.

Per rule: held share, requests/s of motion, age p50 and lateness p50 over the rows played after the
first 3 s. `append` is today's rule (requests by the lead, chunks appended); `takeover` the newest
chunk replacing the older rows, requests by the budget (`default` = one per window) and the lead.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: F401  (puts this checkout on the path)

from sequence_ai._loop._budget import default_budget, expected_age_s, expected_lateness_s, request_due
from sequence_ai._loop._latency import RefillLatency
from sequence_ai._loop._stitch import RowKind, Stitcher
from sequence_ai._loop._takeover import Arrival, lateness_s, rows_to_keep, take_over

HZ, ROWS, WINDOW, JITTER = 15.0, 15, 8, 0.2
KIND = RowKind(absolute=True, displacement=False, joints=1)
SETTLED_S = 3.0


def chunk(at: float) -> List[List[float]]:
    """Rows of a steady motion, position = time: row i of a chunk observed at `at` is at + (i+1)/hz."""
    return [[at + (i + 1) / HZ] for i in range(ROWS)]


def simulate(latency_s: float, rule: str, budget: Optional[float], seconds: float, seed: int,
             margin_devs: float = 2.0) -> Dict[str, float]:
    draw = random.Random(seed)
    estimate = RefillLatency()
    stitcher = Stitcher("continue", WINDOW, 0)
    buffer: list = []
    flights: list = []  # (started, lands, actions_at_submit), oldest first
    last = None
    actions, held, requests, last_started = 0, 0, 0, None
    ages: List[float] = []
    late: List[float] = []
    for tick in range(int(seconds * HZ)):
        now = tick / HZ
        # answers in the order asked (taking one that landed before an older one still on its way
        # changed nothing measurable here, and would change what a failed request does)
        while flights and flights[0][1] <= now:
            started, lands, at_submit = flights.pop(0)
            estimate.record(lands - started)
            if rule == "append":
                ahead = len(buffer)
                join = stitcher.join(chunk(started), KIND, late=actions + ahead - at_submit,
                                     last=(buffer[-1] if buffer else last), q_obs=None, first_of_run=last is None)
                for action in join.rows:
                    action.observed_at = started
                buffer.extend(join.rows)
            else:
                # the next chunk can be counted on once its request (in flight, else the next the
                # budget starts) has had the latency estimate and a margin of its deviation to land
                estimated = estimate.estimate_s
                margin_s = margin_devs * estimate.deviation_s
                rate = budget if budget is not None else default_budget(HZ, WINDOW)
                next_start = flights[0][0] if flights else max(now, (last_started or now) + 1.0 / rate)
                due = None if estimated is None else next_start + estimated + margin_s
                taken = take_over(buffer, Arrival(chunk(started), KIND, started), last=last, now=now, hz=HZ,
                                  keep=rows_to_keep(now, due, HZ, WINDOW))
                if taken is not None:
                    buffer = list(taken.rows)
        if buffer:
            action = buffer.pop(0)
            last, actions = action, actions + 1
            if now >= SETTLED_S:
                ages.append(now - action.observed_at)
                late.append(lateness_s(action, now, HZ))
        elif actions:
            held += 1
        queued = (len(buffer) + WINDOW * len(flights)) / HZ
        lead = estimate.lead_s(HZ)
        if rule == "append":
            due_now = (not buffer and not flights) or (lead is not None and queued <= lead)
        else:
            rate = budget if budget is not None else default_budget(HZ, WINDOW)
            due_now = request_due(now, last_started=last_started, in_flight=len(flights), buffered_s=len(buffer) / HZ,
                                  lead_s=lead, budget=rate)
        if due_now and len(flights) < 8:
            lands = now + latency_s * (1 + draw.uniform(-JITTER, JITTER))
            flights.append((now, lands, actions))
            requests, last_started = requests + 1, now
    motion_s = actions / HZ
    return {"held_share": held / (held + actions), "requests_per_s": requests / motion_s,
            "age_p50_s": _p50(ages), "lateness_p50_s": _p50(late)}


def _p50(values: List[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else float("nan")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latencies", default="0.6,0.7,0.8")
    parser.add_argument("--budgets", default="default,2.5,4,6.25")
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--margin-devs", type=float, default=2.0,
                        help="the next chunk is counted on at its request's start + the latency estimate + this "
                             "many of its mean deviations (the lead's jitter term is 2)")
    args = parser.parse_args(argv)
    print("| latency | rule | budget /s | held | requests/s | age p50 | lateness p50 | formula age / lateness |")
    print("|---|---|---|---|---|---|---|---|")
    for latency in (float(x) for x in args.latencies.split(",")):
        cases = [("append", None)] + [("takeover", None if b == "default" else float(b))
                                      for b in args.budgets.split(",")]
        for rule, budget in cases:
            r = simulate(latency, rule, budget, args.seconds, seed=7, margin_devs=args.margin_devs)
            interval = 1.0 / (budget or default_budget(HZ, WINDOW))
            formula = (f"{expected_age_s(latency, interval):.2f} / "
                       f"{expected_lateness_s(latency, interval, ROWS / HZ):.2f} s") if rule == "takeover" else "—"
            print(f"| {latency:g} s | {rule} | {'default' if budget is None else f'{budget:g}'} | "
                  f"{r['held_share'] * 100:.1f} % | {r['requests_per_s']:.2f} | {r['age_p50_s']:.2f} s | "
                  f"{r['lateness_p50_s']:.2f} s | {formula} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
