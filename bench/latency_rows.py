"""The table's rows for the loop at pi05-droid's real latency: `bench_latency`
in run() and `bench_ros_latency` through the node, with their goals.

The goals come from the physics (`sequence_ai._loop._budget`): at latency L with H = 15 rows, W = 8
and 15 Hz, age p50 ≤ L + W/2 + 1/hz. Lateness p50 ≤ L_q90 − (H − W)/hz + 1/hz, where L_q90 is the
latency's 90th percentile: with a latency that varies (±20 % here, uniform), the rows of one chunk
must last until the late end of the next one's, so the latency the take-over waits out is a high
quantile, not L (0.30 / 0.41 / 0.53 s at 0.6 / 0.7 / 0.8 s). Beside ours: the 0.20.0 client and the
appending rule (`take_over=False`).

The budget curve (`budget_curves`) is the same result seen three ways: rows of the table, a
markdown table of its own (`budget_table`, docs/budget-table.md, which docs/CLIENT-LOOP.md refers
to) and a plot (`plot_budget_curves`, docs/budget-curve.png).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import bench_latency
import common
from table import Row, verdict

HZ, WINDOW_S, CHUNK_S = bench_latency.HZ, bench_latency.WINDOW_S, bench_latency.CHUNK_S
Curves = Dict[float, List[Tuple[str, dict]]]  # latency → (budget's name, figures), the default first


def age_goal(latency: float) -> float:
    from sequence_ai._loop._budget import expected_age_s

    return expected_age_s(latency, WINDOW_S) + 1.0 / HZ


def latency_q90(latency: float) -> float:
    """The 90th percentile of the bench's latency, uniform within ±JITTER of `latency`."""
    return latency * (1.0 - bench_latency.JITTER + 0.9 * 2.0 * bench_latency.JITTER)


def lateness_goal(latency: float) -> float:
    return max(0.0, latency_q90(latency) - (CHUNK_S - WINDOW_S)) + 1.0 / HZ


def usable(r: Optional[dict]) -> Optional[dict]:
    return r if r is not None and "error" not in r else None


def held_cell(r: dict) -> str:
    return f"{r['held_share'] * 100:.2f} % ({r['underruns']})"


def rate_cell(r: dict) -> str:
    return f"{r['requests_per_s']:.3f}"


def age_cell(r: dict) -> str:
    return f"{r['age_p50_s']:.2f} / {r.get('age_p99_s', r.get('age_max_s', float('nan'))):.2f} s"


def lateness_cell(r: dict) -> str:
    return f"{r['lateness_p50_s']:.2f} / {r.get('lateness_p99_s', r.get('lateness_max_s', float('nan'))):.2f} s"


def step_cell(r: dict) -> str:
    return f"{r['step_ratio']:.2f}"


def settle_cell(r: dict) -> str:
    return "never" if r["settle_s"] is None else f"{r['settle_s']:.2f} s"


def overshoot_cell(r: dict) -> str:
    return f"{r['overshoot_rad']:.3f} rad"


def beside(fmt, *runs, empty: str = "n/a") -> str:
    """The peer cell: each (run, label) that was measured, formatted by `fmt`."""
    return "; ".join(f"{fmt(r)} ({label})" for r, label in runs if r is not None) or empty


def latency_rows(result: dict) -> List[Row]:
    """bench_latency.measure()'s result: per latency, then the moving goal and the instruction swaps."""
    entries = result["latencies"]
    out: List[Row] = []
    low = next((e for e in entries if e["latency_s"] < WINDOW_S / 4), None)
    base = usable((low or {}).get("ours"))
    for entry in entries:
        latency, ours = entry["latency_s"], entry.get("ours", {})
        peer, append = usable(entry.get("peer")), usable(entry.get("ours append"))
        before = usable(entry.get("ours la=1"))
        at = f"latency {latency:g} s ±20 %"
        others = ((peer, "0.20.0"), (append, "appending rule"))
        if "error" in ours:
            out.append(Row(f"run() at {at}", f"error: {ours['error']}", verdict="FAIL"))
            continue
        real = latency >= 0.6
        out += failed_references(at, entry, ("peer", "ours append", "ours la=1"))
        if real:
            held_goal, held_ok = "≤ 1 %", ours["held_share"] <= 0.01
        else:
            held_goal, held_ok = ("0 underruns", ours["underruns"] == 0) if latency < WINDOW_S / 2 else ("—", None)
        out.append(Row(f"time held, share of the run, {at} (run(), {ours['actions']} actions; underruns)",
                       f"{ours['held_share'] * 100:.2f} % ({ours['underruns']})",
                       beside(held_cell, *others),
                       "—", held_goal, verdict(held_ok)))
        if not real and entry is not low:
            continue
        bound = 1.33 / WINDOW_S
        out.append(Row(f"requests per second of motion, {at} (the least a window allows: 1/W = {1 / WINDOW_S:.3f})",
                       f"{ours['requests_per_s']:.3f}", beside(rate_cell, *others),
                       "—", f"≤ {bound:.2f} (1.33/W)", verdict(ours["requests_per_s"] <= bound)))
        out += freshness_rows(f"{at} (run())", latency, ours, beside(age_cell, *others),
                              beside(lateness_cell, *others), real)
        out.append(Row(f"largest step between consecutive targets ÷ median step, {at}", f"{ours['step_ratio']:.2f}",
                       beside(step_cell, *others), "—", "≤ 2×",
                       verdict(ours["step_ratio"] <= 2.0)))
        if real and base is not None and base.get("settle_s"):
            out += closed_loop_rows(at + " (run())", ours, base["settle_s"], before, beside(settle_cell, *others),
                                    beside(overshoot_cell, *others))
    return out + moving_goal_rows(result.get("sweep") or {}) + swap_rows(result.get("swaps") or {})


def failed_references(at: str, entry: dict, names) -> List[Row]:
    """A run the rows compare against that failed: said, since a goal beside it cannot be judged."""
    return [Row(f"{name} at {at}: the run failed", f"error: {entry[name]['error']}"[:200], verdict="FAIL")
            for name in names if "error" in (entry.get(name) or {})]


def freshness_rows(at: str, latency: float, ours: dict, ages_beside: str, late_beside: str, real: bool) -> List[Row]:
    """Age of the observation behind each action and lateness of each row, p50 / p99 (p50 / max
    where the run reports only those: the node's outcome)."""
    rows = []
    for name, key, goal, shown in (("age of the observation behind each action when acted", "age", age_goal(latency),
                                    ages_beside),
                                   ("lateness of each row (played − the moment it was for)", "lateness",
                                    lateness_goal(latency), late_beside)):
        value, spread = ours.get(f"{key}_p50_s"), "p99" if f"{key}_p99_s" in ours else "max"
        high = ours.get(f"{key}_{spread}_s")
        known = value is not None and value == value and high is not None  # not NaN
        rows.append(Row(f"{name}, {at}, p50 / {spread}", f"{value:.2f} / {high:.2f} s" if known else "n/a", shown,
                        "—", f"p50 ≤ {goal:.2f} s" if real else "—", verdict(known and value <= goal) if real else "—"))
    return rows


def closed_loop_rows(at: str, ours: dict, base_settle: float, before: Optional[dict], settle_beside: str,
                     overshoot_beside: str) -> List[Row]:
    settle = ours["settle_s"]
    text = "never" if settle is None else f"{settle:.2f} s = {settle / base_settle:.2f}× the low-latency run"
    limit = None if before is None else before["overshoot_rad"]
    return [Row(f"closed loop: time to settle on the stand-in's goal (±{bench_latency.SETTLE_RAD} rad), {at}", text,
                settle_beside, "—", "≤ 1.2× the low-latency run",
                verdict(settle is not None and settle <= 1.2 * base_settle)),
            Row(f"closed loop: largest overshoot past the goal, {at}", f"{ours['overshoot_rad']:.3f} rad",
                overshoot_beside, "—", "n/a" if limit is None else f"≤ {limit:.3f} rad (this client stop-and-go)",
                verdict(None if limit is None else ours["overshoot_rad"] <= limit + 1e-3))]


def moving_goal_rows(sweep: Dict[str, dict]) -> List[Row]:
    from sequence_ai.platform.policies import SWEEP_AMPLITUDE_RAD, SWEEP_PERIOD_S

    since = (sweep.get("ours") or {}).get("rms_from_s", 0)
    metric = (f"moving goal: RMS distance from a goal sweeping ±{SWEEP_AMPLITUDE_RAD:g} rad over {SWEEP_PERIOD_S:g} s, "
              f"latency {bench_latency.REAL:g} s ±20 %, closed loop (run(), from {since:g} s on)")
    ours, failed = ours_of(sweep, metric)
    if ours is None:
        return failed
    append, peer = usable(sweep.get("ours append")), usable(sweep.get("peer"))
    shown = beside(lambda r: f"{r['rms_rad']:.3f} rad", (peer, "0.20.0"), (append, "appending rule"))
    goal = "≤ 0.8× the appending rule's"
    if append is None:  # nothing to hold ours to
        return [Row(metric, f"{ours['rms_rad']:.3f} rad", shown, "—",
                    f"{goal} (its run failed: {(sweep.get('ours append') or {}).get('error', 'not run')})"[:200],
                    "FAIL")]
    ratio = ours["rms_rad"] / append["rms_rad"] if append["rms_rad"] > 0 else float("nan")
    return [Row(metric, f"{ours['rms_rad']:.3f} rad", shown, f"{ratio:.2f} (÷ appending)", goal,
                verdict(ratio <= 0.8))]


def ours_of(runs: Dict[str, dict], metric: str) -> Tuple[Optional[dict], List[Row]]:
    """Our run among `runs`, or None and the rows to show instead (none when it was not run)."""
    ours = runs.get("ours")
    if ours is not None and "error" in ours:
        return None, [Row(metric, f"error: {ours['error']}", verdict="FAIL")]
    return ours, []


def swap_rows(swaps: Dict[str, dict]) -> List[Row]:
    metric = (f"instruction lag (set_instruction → the first action computed with it), latency "
              f"{bench_latency.REAL:g} s ±20 %, p50 / max")
    ours, failed = ours_of(swaps, metric)
    if ours is None:
        return failed

    def shown(r: dict) -> str:
        lags = r["lags_s"]
        return f"{common.percentile(lags, 50):.2f} / {max(lags):.2f} s ({len(lags)} swaps)" if lags else "none measured"

    append = usable(swaps.get("ours append"))
    if append is None or not append["lags_s"]:  # nothing to hold ours to
        why = "its run failed" if append is None else "it measured no lag"
        return [Row(metric, shown(ours), "—", goal=f"max ≤ the appending rule's ({why})", verdict="FAIL")]
    ok = bool(ours["lags_s"]) and max(ours["lags_s"]) <= max(append["lags_s"])
    return [Row(metric, shown(ours), f"{shown(append)} (appending rule)", goal="max ≤ the appending rule's",
                verdict=verdict(ok))]


def budget_curves(result: dict) -> Curves:
    """Per latency with budget runs: its default run (as "default") and each budget's run, in the
    order of the budget; runs that failed are left out here (`budget_rows` says so)."""
    out: Curves = {}
    for latency, runs in sorted((result.get("budgets") or {}).items()):
        default = next((e.get("ours") for e in result["latencies"] if e["latency_s"] == latency), None)
        curve = [("default", default)] if usable(default) else []
        out[latency] = curve + [(f"{b:.3g}/s", r) for b, r in sorted(runs.items()) if usable(r)]
    return out


def budget_rows(result: dict, curves: Curves) -> List[Row]:
    """The budget curve per latency above the window (ours at each budget, beside its default run),
    and the goal at 0.7 s: lateness p50 ≤ 1/hz at the budget 1/(H/hz − 1.2·L)."""
    from sequence_ai._loop._budget import budget_for_lateness

    rows: List[Row] = []
    for latency, runs in sorted((result.get("budgets") or {}).items()):
        metric = f"budget curve at latency {latency:g} s ±20 %: requests/s → age p50, lateness p50"
        rows += [Row(f"{metric}, budget {b:.3g}/s: the run failed", f"error: {r['error']}"[:200], verdict="FAIL")
                 for b, r in sorted(runs.items()) if "error" in r]
        rows += [Row(f"{metric}, budget {name}", f"{r['requests_per_s']:.2f} req/s: age {r['age_p50_s']:.2f} s, "
                     f"lateness {r['lateness_p50_s']:.2f} s, held {r['held_share'] * 100:.1f} %")
                 for name, r in curves.get(latency, [])]
    real = bench_latency.REAL
    point = budget_for_lateness(real, CHUNK_S)
    metric = f"budget curve at latency {real:g} s ±20 %, at the goal's budget"
    goal = f"lateness p50 ≤ 1/hz = {1000 / HZ:.1f} ms at budget {point:.2f}/s = 1/(H/hz − 1.2·L)"
    if real not in (result.get("budgets") or {}):
        return [*rows, Row(metric, f"not run: no run at {real:g} s", goal=goal, verdict="FAIL")]
    at_point = usable(result["budgets"][real].get(point))
    rows.append(Row(metric, "n/a (the run failed)" if at_point is None else
                    f"lateness p50 {at_point['lateness_p50_s'] * 1000:.1f} ms ({at_point['requests_per_s']:.2f} req/s)",
                    goal=goal, verdict=verdict(at_point is not None and at_point["lateness_p50_s"] <= 1.0 / HZ)))
    return rows


def budget_table(curves: Curves, source: str) -> str:
    """The budget curve as a markdown table of its own (docs/budget-table.md), `source` saying
    which run it comes from."""
    lines = [f"<!-- Generated by {source} (bench/run_all.py, bench/bench_latency.py) — do not edit by hand. -->", "",
             "| latency | request budget | requests/s | age p50 | lateness p50 | held |", "|---|---|---|---|---|---|"]
    for latency, curve in curves.items():
        for name, r in curve:
            budget = "default (one per window)" if name == "default" else name
            lines.append(f"| {latency:g} s ±20 % | {budget} | {r['requests_per_s']:.2f} | {r['age_p50_s']:.2f} s | "
                         f"{r['lateness_p50_s']:.2f} s | {r['held_share'] * 100:.1f} % |")
    return "\n".join(lines) + "\n"


def plot_budget_curves(curves: Curves, path: str, title: str) -> None:
    """Age p50 (solid) and lateness p50 (dashed) against requests/s, one colour per latency."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7.2, 4.5))
    for (latency, curve), colour in zip(curves.items(), ("tab:blue", "tab:orange", "tab:green", "tab:red")):
        ordered = sorted(curve, key=lambda item: item[1]["requests_per_s"])
        rates = [r["requests_per_s"] for _, r in ordered]
        axes.plot(rates, [r["age_p50_s"] for _, r in ordered], "o-", color=colour,
                  label=f"{latency:g} s: age of the observation, p50")
        axes.plot(rates, [r["lateness_p50_s"] for _, r in ordered], "s--", color=colour,
                  label=f"{latency:g} s: lateness of the row, p50")
        for (name, r), rate in zip(ordered, rates):
            axes.annotate(name, (rate, r["age_p50_s"]), textcoords="offset points", xytext=(4, 4), fontsize=7)
    axes.axhline(1.0 / HZ, color="grey", linestyle=":", label="one control period")
    axes.set_xlabel("requests per second of motion")
    axes.set_ylabel("seconds")
    axes.set_title(title, fontsize=10)
    axes.set_ylim(bottom=0)
    axes.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.14))  # below: clear of the curves
    figure.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(figure)


def ros_latency_rows(entries: List[dict]) -> List[Row]:
    """bench_ros_latency: the node with config/policy.yaml on the simulated arm."""
    out: List[Row] = []
    low = next((e["node"] for e in entries if e["latency_s"] < WINDOW_S / 4 and "error" not in e["node"]), None)
    for entry in entries:
        latency, node = entry["latency_s"], entry["node"]
        before, append = usable(entry.get("node before")), usable(entry.get("node append"))
        at = f"through the node (policy.yaml, sim arm), latency {latency:g} s ±20 %"
        if "error" in node:
            out.append(Row(f"time held, {at}", f"error: {node['error']}", verdict="FAIL"))
            continue
        real = latency >= 0.6
        out += failed_references(at, entry, ("node before", "node append"))
        others = ((before, "stop-and-go"), (append, "appending rule"))
        goal, ok = ("≤ 1 %", node["held_share"] <= 0.01) if real else ("—", None)
        out.append(Row(f"time held, share of the run, {at} ({node['actions']} actions; underruns)",
                       f"{node['held_share'] * 100:.2f} % ({node['underruns']})",
                       beside(held_cell, *others, empty="—"), "—", goal, verdict(ok)))
        bound = 1.33 / WINDOW_S
        out.append(Row(f"requests per second of motion, {at}", f"{node['requests_per_s']:.3f}",
                       beside(rate_cell, *others, empty="—"), "—", f"≤ {bound:.2f} (1.33/W)",
                       verdict(node["requests_per_s"] <= bound)))
        out += freshness_rows(at, latency, node, beside(age_cell, *others, empty="—"),
                              beside(lateness_cell, *others, empty="—"), real)
        out.append(Row(f"largest step between consecutive commands ÷ median step, {at}", f"{node['step_ratio']:.2f}",
                       beside(step_cell, *others, empty="—"), "—", "≤ 2×", verdict(node["step_ratio"] <= 2.0)))
        if real and low is not None and low.get("settle_s"):
            out += closed_loop_rows(at, node, low["settle_s"], before, beside(settle_cell, *others, empty="—"),
                                    beside(overshoot_cell, *others, empty="—"))
    return out
