"""The continue join before and after its pull mend, on the physical arm, on a simulated clock.

    .venv/bin/python bench/join_figure.py [--seconds 40] [--figure docs/physics-join.png]

One closed loop per case, on the MuJoCo arm (sequence_ai/sim_physics.py) stepped by the clock here,
not the wall: 15 Hz, the sweeping stand-in (`policies.trajectory` toward `sweep_goal` where it was when
the request was asked, from the joints the arm MEASURED then), each request's latency drawn within
0.7 s ±20 % (seeded), answered in the order asked; the take-over (`take_over`, `rows_to_keep`) and the
`continue` join of this checkout (`_stitch.Stitcher`), as `bench/sim_takeover.py` runs them. Cases:

* after  — the join as it is: the pull toward the chunk's own position, where that lies ahead of the
  arm (on a moving goal it does), grows to ANCHOR over the seam's first ANCHOR_ROWS rows;
* before — ANCHOR_ROWS set to the window (8 rows), which is the schedule the join had before the
  mend: the pull reached ANCHOR only on the window's last row, ahead or behind.

Prints the RMS of the measured joints from the moving goal (from 8 s on) for each, and draws joint 1's
goal, commands and measured position over 6 s of each run, with the seams marked. The real figures
are bench_physics.py's (`make bench`): processes, HTTP, a worker and a busy machine; this is the same
join without the machine's noise, and the same seed for both cases.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

from sequence_ai._loop import _stitch
from sequence_ai._loop._budget import RequestCadence
from sequence_ai._loop._latency import RefillLatency
from sequence_ai._loop._stitch import RowKind
from sequence_ai._loop._takeover import Arrival, rows_to_keep, take_over

HZ, ROWS, WINDOW, LATENCY, JITTER = 15.0, 15, 8, 0.7, 0.2
HOME = [0.0, -0.5, 0.0, -2.2, 0.0, 1.8, 0.8]
INSTRUCTION = "put the red block in the bowl"
KIND = RowKind(absolute=True, displacement=False, joints=7)
FROM_S = 8.0
WALL_START = 1000.0  # the sweep's phase at the run's start (any: both cases share it)
FIGURE = os.path.join(common.ROOT, "docs", "physics-join.png")


class _Asked:
    """What the stand-in reads of a request."""

    instruction, seed = INSTRUCTION, None


def closed_loop(seconds: float, seed: int) -> Dict[str, object]:
    """One run: per tick (t, goal, command, measured) of joint 1, the seams' times, and the RMS."""
    from sequence_ai.platform.policies import SWEEP_GAIN_PER_S, sweep_goal, trajectory
    from sequence_ai.sim_physics import PandaPhysics

    draw, estimate, cadence = random.Random(seed), RefillLatency(), RequestCadence(None)
    arm = PandaPhysics(HOME)
    buffer: list = []
    flights: list = []  # (asked at, lands at, rows), oldest first
    last, seams, trace, errors = None, [], [], []
    ticks = int(seconds * HZ)
    try:
        for tick in range(ticks):
            now = tick / HZ
            while flights and flights[0][1] <= now:
                asked, lands, rows = flights.pop(0)
                estimate.record(lands - asked)
                cadence.learn(HZ, WINDOW)
                latest = estimate.latest_s()
                start = flights[0][0] if flights else cadence.next_start(now)
                due = None if latest is None or start is None else start + latest
                taken = take_over(buffer, Arrival(rows, KIND, asked), last=last, now=now if last else asked, hz=HZ,
                                  keep=rows_to_keep(now, due, HZ, WINDOW))
                if taken is not None:
                    buffer = list(taken.rows)
                    seams.append(now)
            if buffer:
                last = buffer.pop(0)
                arm.command(list(last[:7]), 0.0)
            if cadence.due(now, actions_left=ticks - tick, deadline=None, in_flight=len(flights), buffered=len(buffer),
                           hz=HZ, lead_s=estimate.lead_s(HZ), latency_s=estimate.estimate_s):
                goal = sweep_goal(INSTRUCTION, WALL_START + now)
                rows = trajectory(arm.positions[:7], 0.0, _Asked, ROWS, HZ, goal, SWEEP_GAIN_PER_S)
                flights.append((now, now + LATENCY * (1 + draw.uniform(-JITTER, JITTER)), rows))
                cadence.started(now)
            arm.advance(1.0 / HZ)
            at = now + 1.0 / HZ
            goal, measured = sweep_goal(INSTRUCTION, WALL_START + at), arm.positions[:7]
            trace.append((at, goal[0], float(last[0]) if last is not None else HOME[0], measured[0]))
            if at >= FROM_S:
                errors.extend((q - g) ** 2 for q, g in zip(measured, goal))
    finally:
        arm.close()
    return {"trace": trace, "seams": seams, "rms_rad": math.sqrt(sum(errors) / len(errors))}


def both(seconds: float, seed: int) -> Dict[str, dict]:
    """{"before": run, "after": run} on the same seed; the join's schedule restored after."""
    kept = _stitch.ANCHOR_ROWS
    out = {}
    try:
        for name, rows in (("before", WINDOW), ("after", kept)):
            _stitch.ANCHOR_ROWS = rows
            out[name] = closed_loop(seconds, seed)
    finally:
        _stitch.ANCHOR_ROWS = kept
    return out


def plot(runs: Dict[str, dict], path: str, span=(20.0, 26.0)) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=True)
    for ax, (name, run) in zip(axes, runs.items()):
        shown = [row for row in run["trace"] if span[0] <= row[0] <= span[1]]
        t = [row[0] for row in shown]
        ax.plot(t, [row[1] for row in shown], "k--", lw=1.0, label="goal (moving)")
        ax.plot(t, [row[2] for row in shown], color="tab:orange", lw=1.0, drawstyle="steps-post", label="command")
        ax.plot(t, [row[3] for row in shown], color="tab:blue", lw=1.6, label="measured")
        for seam in run["seams"]:
            if span[0] <= seam <= span[1]:
                ax.axvline(seam, color="grey", lw=0.5, ls=":")
        pull = f"{WINDOW} rows (before)" if name == "before" else f"{_stitch.ANCHOR_ROWS} rows (after)"
        ax.set_title(f"pull grows in over {pull}: RMS {run['rms_rad']:.3f} rad")
        ax.set_xlabel("seconds (dotted: a chunk takes over)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("joint 1 (rad)")
    axes[0].legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--figure", default=FIGURE, help="where the figure goes ('' for none)")
    args = parser.parse_args(argv)
    ratios = []
    for seed in range(1, args.seeds + 1):
        runs = both(args.seconds, seed)
        ratios.append(runs["after"]["rms_rad"] / runs["before"]["rms_rad"])
        print(f"seed {seed}: RMS of the measured joints from the moving goal, before {runs['before']['rms_rad']:.4f} "
              f"rad, after {runs['after']['rms_rad']:.4f} rad ({ratios[-1]:.2f}x)")
        if seed == 1 and args.figure:
            print(f"figure: {plot(runs, args.figure)}")
    print(f"after / before, mean over {len(ratios)} seeds: {sum(ratios) / len(ratios):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
