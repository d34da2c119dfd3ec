"""The take-over and the request budget on a simulated clock: the physics, without the machine.

    .venv/bin/python bench/sim_takeover.py [--latencies 0.6,0.7,0.8] [--budgets default,2.5,4,6.25] [--seconds 120]

The control loop's timing with the client's own rules as run() uses them: the latency estimate
(`RefillLatency`), the request cadence (`RequestCadence`: every 1/budget, the lead's request when
none is on its way and the rows run low, the in-flight cap, none whose answer would land after the
run), the take-over (`take_over`, `rows_to_keep` until the next chunk can be counted on: the next
request's start + `RefillLatency.latest_s()`, from the row for the moment being played less the
time held since the chunk's observation, as `_loop/_arrival.py` does), and for the appending rule
the stitcher (`Stitcher`) with the lead. 15 Hz, 15-row chunks, an 8-row window; each request's
latency drawn uniformly within ±20 % (seeded), its observation taken when it starts, its answer
taken in at the first tick after it lands, in the order asked.

The real figures are `bench_latency.py`'s (`make bench`): processes, HTTP, a worker and a busy
machine. This stays beside it as the sketch of what the rules themselves give — seconds to run, no
noise, any latency or budget — and its `formula` column is `_budget.py`'s physics, so a gap between
the three says which of rule, physics or machine it comes from.

Per rule: held share, requests/s of motion, age p50 and lateness p50 over the rows played after the
first 3 s. `append` is the appending rule (`take_over=False`: requests by the lead, chunks
appended); `takeover` the default (the newest chunk replacing the older rows), at each budget
(`default` = one per window).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: F401  (puts this checkout on the path)

from sequence_ai._loop._budget import RequestCadence, default_budget, expected_age_s, expected_lateness_s
from sequence_ai._loop._latency import RefillLatency
from sequence_ai._loop._stitch import RowKind, Stitcher
from sequence_ai._loop._takeover import Arrival, lateness_s, rows_to_keep, take_over

HZ, ROWS, WINDOW, JITTER = 15.0, 15, 8, 0.2
KIND = RowKind(absolute=True, displacement=False, joints=1)
SETTLED_S = 3.0


def chunk(at: float) -> List[List[float]]:
    """Rows of a steady motion, position = time: row i of a chunk observed at `at` is at + (i+1)/hz."""
    return [[at + (i + 1) / HZ] for i in range(ROWS)]


def simulate(latency_s: float, rule: str, budget: Optional[float], seconds: float, seed: int) -> Dict[str, float]:
    draw = random.Random(seed)
    estimate = RefillLatency()
    stitcher = Stitcher("continue", WINDOW, 0)
    cadence = RequestCadence(budget)
    buffer: list = []
    flights: list = []  # (started, lands, actions_at_submit, held_s_at_submit), oldest first
    last = None
    actions, held, requests = 0, 0, 0
    ages: List[float] = []
    late: List[float] = []
    ticks = int(seconds * HZ)
    for tick in range(ticks):
        now = tick / HZ
        # answers in the order asked, as run() takes them in
        while flights and flights[0][1] <= now:
            started, lands, at_submit, held_at_submit = flights.pop(0)
            estimate.record(lands - started)
            if rule == "append":
                ahead = len(buffer)
                join = stitcher.join(chunk(started), KIND, late=actions + ahead - at_submit,
                                     last=(buffer[-1] if buffer else last), q_obs=None, first_of_run=last is None)
                for action in join.rows:
                    action.observed_at = started
                buffer.extend(join.rows)
            else:  # Arrivals._take_over
                cadence.learn(HZ, WINDOW)
                moment = started if actions == 0 else now - max(0.0, (held - held_at_submit) / HZ)
                latest = estimate.latest_s()
                start = flights[0][0] if flights else cadence.next_start(now)
                due = None if latest is None or start is None else start + latest
                taken = take_over(buffer, Arrival(chunk(started), KIND, started), last=last, now=moment, hz=HZ,
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
        lead = estimate.lead_s(HZ)
        if rule == "append":
            queued = (len(buffer) + WINDOW * len(flights)) / HZ
            due_now = ((not buffer and not flights) or (lead is not None and queued <= lead)) and len(flights) < 8
        else:  # ControlLoop.top_up
            due_now = cadence.due(now, in_flight=len(flights), buffered_s=len(buffer) / HZ, lead_s=lead,
                                  latency_s=estimate.estimate_s, left_s=(ticks - tick) / HZ)
        if due_now:
            lands = now + latency_s * (1 + draw.uniform(-JITTER, JITTER))
            flights.append((now, lands, actions, held))
            cadence.started(now)
            requests += 1
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
    args = parser.parse_args(argv)
    print("| latency | rule | budget /s | held | requests/s | age p50 | lateness p50 | formula age / lateness |")
    print("|---|---|---|---|---|---|---|---|")
    for latency in (float(x) for x in args.latencies.split(",")):
        cases = [("append", None)] + [("takeover", None if b == "default" else float(b))
                                      for b in args.budgets.split(",")]
        for rule, budget in cases:
            r = simulate(latency, rule, budget, args.seconds, seed=7)
            interval = 1.0 / (budget or default_budget(HZ, WINDOW))
            formula = (f"{expected_age_s(latency, interval):.2f} / "
                       f"{expected_lateness_s(latency, interval, ROWS / HZ):.2f} s") if rule == "takeover" else "—"
            print(f"| {latency:g} s | {rule} | {'default' if budget is None else f'{budget:g}'} | "
                  f"{r['held_share'] * 100:.1f} % | {r['requests_per_s']:.2f} | {r['age_p50_s']:.2f} s | "
                  f"{r['lateness_p50_s']:.2f} s | {formula} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
