"""The physical arm (sequence_ai/sim_physics.py): how much its joints lag their commands, and the
loop at pi05-droid's real latency on it, judged on what the arm MEASURES.

    .venv/bin/python bench/bench_physics.py [--seconds 20] [--ours-only] [--figure docs/physics-step-response.png]

1. Step response: from home, each joint's target steps by STEP_RAD (and by LARGE_STEP_RAD, where
   the force limits bite) while the others hold; the measured joint is sampled every physics step.
   Reported in control periods of 15 Hz: the time to 50 %, 90 % and 95 % of the step, and the
   overshoot. The figure draws every joint's response.
2. Closed loop at 0.7 s ±20 %: a local platform serving the stand-in behind that delay; each client
   drives the physical arm (`physics_driver.py`, the arm in `physical_arm.py`) from home for
   `seconds` at 15 Hz: ours with its defaults, ours with the appending rule (`take_over=False`) and
   the 0.20.0 client; toward the instruction's fixed goal, then on a platform whose goal sweeps
   (`policies.sweeping`). One run at a time: the arm's physics and renders run in real time beside
   the client, and runs side by side would lend each other's load to the figures.

Per run: backward yanks (control periods in which the commanded target steps back against the
motion, toward-the-goal, by more than YANK_RAD on a joint with somewhere to go, the goal steady),
the same on the measured joints, the largest step ÷ the median step of the commands and of the
measured joints, tracking while the commands move (the target in force − the measured joints,
largest joint, p50 and max),
held share, age and lateness p50; on the sweeping goal the RMS of the MEASURED joints from the goal;
the arm's own cost: render ms per view, physics ms per control period, and their share of one.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
from table import Row, verdict

HZ, PERIOD_S, LATENCY, JITTER = 15.0, 1.0 / 15.0, 0.7, 0.2
HOME = [0.0, -0.5, 0.0, -2.2, 0.0, 1.8, 0.8]
STEP_RAD, LARGE_STEP_RAD = 0.1, 0.5
YANK_RAD = 0.010
FAR_RAD = 0.1  # a joint whose goal is nearer than this from home has nowhere to go: no direction to judge
SWEEP_FROM_S = 8.0
INSTRUCTION = "put the red block in the bowl"
HERE = os.path.dirname(os.path.abspath(__file__))
FIGURE = os.path.join(common.ROOT, "docs", "physics-step-response.png")
CLIENTS = (("ours", True, {}), ("ours append", True, {"take_over": False}), ("peer", False, {}))


# -- 1. the step response --------------------------------------------------------------------------

def step_response(step: float, seconds: float = 1.0) -> Dict[str, object]:
    """Each joint's normalised response to a target step of `step` rad from home."""
    from sequence_ai.sim_physics import PandaPhysics

    curves, figures = [], []
    for joint in range(7):
        arm = PandaPhysics(HOME)
        arm.advance(0.2)
        target = list(HOME)
        target[joint] += step
        arm.command(target, 0.0)
        timestep = arm.model.opt.timestep
        curve = []
        for _ in range(int(seconds / timestep)):
            arm.advance(timestep)
            curve.append((arm.positions[joint] - HOME[joint]) / step)
        arm.close()

        def periods_to(share: float, curve: List[float] = curve, timestep: float = timestep) -> float:
            index = next((i for i, v in enumerate(curve) if v >= share), None)
            return float("nan") if index is None else (index + 1) * timestep / PERIOD_S

        figures.append({"joint": joint + 1, "p50": periods_to(0.5), "p90": periods_to(0.9), "p95": periods_to(0.95),
                        "overshoot": max(0.0, max(curve) - 1.0), "after_1_period": curve[int(PERIOD_S / timestep) - 1]})
        curves.append(curve)
    return {"step_rad": step, "timestep_s": timestep, "curves": curves, "joints": figures}


def plot_steps(responses: Sequence[dict], path: str) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(responses), figsize=(5.5 * len(responses), 3.8), sharey=True)
    for ax, response in zip(axes if len(responses) > 1 else [axes], responses):
        dt = response["timestep_s"]
        for joint, curve in enumerate(response["curves"]):
            ax.plot([(i + 1) * dt / PERIOD_S for i in range(len(curve))], curve, label=f"joint {joint + 1}")
        ax.axhline(1.0, color="k", lw=0.6)
        ax.axhline(0.9, color="k", lw=0.4, ls=":")
        ax.set_xlim(0, 12)
        ax.set_xlabel("control periods at 15 Hz since the target stepped")
        ax.set_title(f"target step {response['step_rad']:g} rad from home")
        ax.grid(alpha=0.3)
    (axes[0] if len(responses) > 1 else axes).set_ylabel("measured ÷ step")
    (axes[0] if len(responses) > 1 else axes).legend(fontsize=7)
    fig.suptitle("MuJoCo Panda (gymnasium-robotics kitchen_franka): position servos' step response "
                 "(bench/bench_physics.py)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


# -- 2. the closed loop ----------------------------------------------------------------------------

def drive(python: str, env: Dict[str, str], spec: dict, ours: bool) -> dict:
    env = dict(env)
    if ours:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), common.ROOT) if p)
    else:
        env.pop("PYTHONPATH", None)  # the peer must never import this checkout (the arm's process may)
    spec = {**spec, "arm_python": sys.executable, "arm": os.path.join(HERE, "physical_arm.py")}
    result = subprocess.run([python, os.path.join(HERE, "physics_driver.py"), json.dumps(spec)], env=env,
                            capture_output=True, text=True, cwd=tempfile.gettempdir(), timeout=900)
    if result.returncode != 0:
        return {"error": (result.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def _ratio(steps: List[float]) -> float:
    moving = [s for s in steps if s > 1e-4]
    median = common.percentile(moving, 50) if moving else 0.0
    return max(steps) / median if median > 0 else float("nan")


def yanks(series: List[List[float]], goal: Sequence[float]) -> int:
    """Periods in which a joint heading for `goal` (from home) steps back by more than YANK_RAD."""
    heading = [(1.0 if g > h else -1.0) if abs(g - h) > FAR_RAD else 0.0 for g, h in zip(goal, HOME)]
    return sum(any(d * (b - a) < -YANK_RAD for a, b, d in zip(p, q, heading)) for p, q in zip(series, series[1:]))


def figures(result: dict, goal: Optional[Sequence[float]] = None, moving=None, from_s: float = SWEEP_FROM_S) -> dict:
    if "error" in result:
        return result
    log = result.pop("log")
    targets, measured = [e[2] for e in log], [e[3] for e in log]
    # while the arm is told to move (a held arm at its goal tracks trivially)
    tracking = [max(abs(t - m) for t, m in zip(target, now))
                for before, target, now in zip(targets, targets[1:], measured[2:])
                if max(abs(a - b) for a, b in zip(before, target)) > 1e-4]
    result.update({
        "held_share": result["underrun_s"] / result["elapsed_s"] if result["elapsed_s"] > 0 else float("nan"),
        "command_step_ratio": _ratio([max(abs(a - b) for a, b in zip(p, q)) for p, q in zip(targets, targets[1:])]),
        "measured_step_ratio": _ratio([max(abs(a - b) for a, b in zip(p, q)) for p, q in zip(measured, measured[1:])]),
        "tracking_p50": common.percentile(tracking, 50), "tracking_max": max(tracking) if tracking else float("nan"),
        "age_p50_s": common.percentile([e[4] for e in log if e[4] is not None], 50),
        "lateness_p50_s": common.percentile([e[5] for e in log if e[5] is not None], 50),
    })
    arm = result.get("arm")  # the arm's own costs, where it ran in a process of ours
    if arm:
        result.update({"render_ms": arm["render_s"] / max(1, arm["renders"]) * 1000,
                       "physics_ms_per_period": arm["physics_s"] / max(1e-9, arm["sim_s"] / PERIOD_S) * 1000,
                       "renders_per_s": arm["renders"] / max(1e-9, arm["wall_s"])})
    if goal is not None:
        result["command_yanks"], result["measured_yanks"] = yanks(targets, goal), yanks(measured, goal)
    if moving is not None:
        errors = [(q - g) ** 2 for (t, wall, _, now, *_) in log if t >= from_s for q, g in zip(now, moving(wall))]
        result["rms_rad"] = math.sqrt(sum(errors) / len(errors)) if errors else float("nan")
    return result


def measure(seconds: float = 20.0, peer: Optional[str] = None, log=print, steps: bool = True) -> dict:
    """{"steps": [step_response, ...], "fixed": {client: figures}, "sweep": {client: figures}}."""
    from sequence_ai.platform.policies import instruction_goal, sweep_goal

    out: dict = {"steps": [step_response(STEP_RAD), step_response(LARGE_STEP_RAD)] if steps else [],
                 "fixed": {}, "sweep": {}, "seconds": seconds}
    for response in out["steps"]:
        log(f"  step {response['step_rad']:g} rad: " + ", ".join(
            f"j{j['joint']} 90% in {j['p90']:.1f} periods" for j in response["joints"]))
    spec = {"seconds": seconds, "instruction": INSTRUCTION, "home": HOME, "hz": HZ}
    for kind, stand_in in (("fixed", ""), ("sweep", "sweeping")):
        with common.bench_platform(LATENCY, JITTER, seed=7, stand_in=stand_in) as platform:
            env = {**os.environ, **platform.env()}
            for name, ours, kwargs in CLIENTS:
                if not ours and peer is None:
                    continue
                raw = drive(sys.executable if ours else peer, env, {**spec, "kwargs": kwargs}, ours)
                if kind == "fixed":
                    out[kind][name] = figures(raw, goal=instruction_goal(INSTRUCTION))
                else:
                    out[kind][name] = figures(raw, moving=lambda t: sweep_goal(INSTRUCTION, t),
                                              from_s=min(SWEEP_FROM_S, seconds / 2))
                log(f"  {kind:>5} {name:<12} {summary(out[kind][name])}")
    return out


def summary(r: dict) -> str:
    if "error" in r:
        return f"error: {r['error']}"
    text = (f"{r['actions']} actions, held {r['held_share'] * 100:.1f}%, steps cmd {r['command_step_ratio']:.2f}x "
            f"measured {r['measured_step_ratio']:.2f}x, tracking p50 {r['tracking_p50'] * 1000:.1f} max "
            f"{r['tracking_max'] * 1000:.1f} mrad, age p50 {r['age_p50_s']:.2f}s, lateness p50 "
            f"{r['lateness_p50_s']:.2f}s")
    if "render_ms" in r:
        text += f", render {r['render_ms']:.1f} ms/view, physics {r['physics_ms_per_period']:.2f} ms/period"
    if "command_yanks" in r:
        text += f", yanks cmd {r['command_yanks']} measured {r['measured_yanks']}"
    if "rms_rad" in r:
        text += f", RMS measured from the moving goal {r['rms_rad']:.3f} rad"
    return text


# -- the table's rows ------------------------------------------------------------------------------

def physics_rows(result: dict) -> List[Row]:
    """bench_physics.measure()'s result: the step response, the loop through run(), the arm's cost."""
    out: List[Row] = []
    for response in result.get("steps") or []:
        joints = response["joints"]
        out.append(Row(f"physical arm: servo step response to a {response['step_rad']:g} rad target step, control "
                       "periods to 50 % / 90 % (joints 1…7; overshoot)",
                       "; ".join(f"{j['p50']:.1f}/{j['p90']:.1f}" for j in joints)
                       + f" (overshoot ≤ {max(j['overshoot'] for j in joints) * 100:.1f} %)", goal="— (stated)"))
    out += loop_rows(result, "run()", "ours", (("ours append", "appending rule"), ("peer", "0.20.0")))
    ours = (result.get("fixed") or {}).get("ours") or {}
    if "render_ms" in ours:
        render_share = 2 * ours["render_ms"] / (PERIOD_S * 1000)
        out += [
            Row(f"the simulator's cost: render ms per view ({'×'.join(map(str, ours['arm']['size']))}, OSMesa, no GPU)",
                f"{ours['render_ms']:.1f} ms", goal=f"— (two views = {render_share * 100:.0f} % of a 15 Hz period; "
                f"rendered {ours['renders_per_s']:.1f} views/s here)"),
            Row("the simulator's cost: physics ms per 15 Hz control period (2 ms steps)",
                f"{ours['physics_ms_per_period']:.2f} ms",
                goal=f"— ({ours['physics_ms_per_period'] / (PERIOD_S * 10):.1f} % of a period)"),
        ]
    return out


def node_rows(result: dict) -> List[Row]:
    """bench_physics_node.measure()'s result: the loop through the node."""
    if "error" in result:
        return [Row("physical arm through the node", f"error: {result['error']}"[:200], verdict="FAIL")]
    return loop_rows(result, "through the node (policy.yaml)", "node", (("node append", "appending rule"),))


def loop_rows(result: dict, how: str, main: str, others: Sequence[tuple]) -> List[Row]:
    """The closed loop's rows: `main`'s figures, `others` ((name, label), ...) beside them."""
    from latency_rows import age_goal, lateness_goal

    at = f"physical arm, latency {LATENCY:g} s ±20 %, {how}, {result.get('seconds', 0):g} s"
    fixed, sweep = result.get("fixed") or {}, result.get("sweep") or {}
    ours = fixed.get(main) or {"error": "not run"}
    if "error" in ours:
        return [Row(f"{at}: the run failed", f"error: {ours['error']}"[:200], verdict="FAIL")]
    beside_runs = [(fixed.get(name), label) for name, label in others]

    def beside(fmt) -> str:
        return "; ".join(f"{fmt(r)} ({label})" for r, label in beside_runs if r and "error" not in r) or "n/a"

    count = lambda key: lambda r: str(r[key])  # noqa: E731
    ratio = lambda key: lambda r: f"{r[key]:.2f}"  # noqa: E731
    out = [
        Row(f"backward yanks of the commands (> {YANK_RAD * 1000:g} mrad back against the motion, goal steady), {at}",
            str(ours["command_yanks"]), beside(count("command_yanks")), goal="0",
            verdict=verdict(ours["command_yanks"] == 0)),
        Row(f"backward yanks of the measured joints, {at}", str(ours["measured_yanks"]),
            beside(count("measured_yanks")), goal="0", verdict=verdict(ours["measured_yanks"] == 0)),
        Row(f"largest step ÷ median step of the commands, {at}", f"{ours['command_step_ratio']:.2f}",
            beside(ratio("command_step_ratio")), goal="≤ 2×", verdict=verdict(ours["command_step_ratio"] <= 2.0)),
        Row(f"largest step ÷ median step of the measured joints, {at}", f"{ours['measured_step_ratio']:.2f}",
            beside(ratio("measured_step_ratio")), goal="≤ 2×", verdict=verdict(ours["measured_step_ratio"] <= 2.0)),
        Row(f"tracking while moving, target in force − measured (largest joint) p50 / max, {at}",
            f"{ours['tracking_p50'] * 1000:.1f} / {ours['tracking_max'] * 1000:.1f} mrad",
            beside(lambda r: f"{r['tracking_p50'] * 1000:.1f} / {r['tracking_max'] * 1000:.1f} mrad")),
        Row(f"time held, share of the run, {at}", f"{ours['held_share'] * 100:.2f} % ({ours['underruns']})",
            beside(lambda r: f"{r['held_share'] * 100:.2f} % ({r['underruns']})"), goal="≤ 1 %",
            verdict=verdict(ours["held_share"] <= 0.01)),
        Row(f"age / lateness p50, {at}", f"{ours['age_p50_s']:.2f} / {ours['lateness_p50_s']:.2f} s",
            beside(lambda r: f"{r['age_p50_s']:.2f} / {r['lateness_p50_s']:.2f} s"),
            goal=f"≤ {age_goal(LATENCY):.2f} / ≤ {lateness_goal(LATENCY):.2f} s",
            verdict=verdict(ours["age_p50_s"] <= age_goal(LATENCY) and ours["lateness_p50_s"] <= lateness_goal(LATENCY))),
    ]
    moving, append = sweep.get(main) or {}, sweep.get(others[0][0]) or {}
    if "rms_rad" in moving and "rms_rad" in append:
        share = moving["rms_rad"] / append["rms_rad"]
        rest = "".join(f"; {(sweep.get(name) or {})['rms_rad']:.3f} rad ({label})" for name, label in others[1:]
                       if "rms_rad" in (sweep.get(name) or {}))
        from_s = min(SWEEP_FROM_S, result.get("seconds", 0) / 2)
        out.append(Row(f"moving goal: RMS of the MEASURED joints from the goal, {at} (from {from_s:g} s)",
                       f"{moving['rms_rad']:.3f} rad", f"{append['rms_rad']:.3f} rad (appending rule){rest}",
                       f"{share:.2f}", "≤ 0.8× the appending rule", verdict(share <= 0.8)))
    elif moving or append:
        out.append(Row(f"moving goal on the physical arm, {at}", f"error: {moving.get('error') or append.get('error')}",
                       verdict="FAIL"))
    return out


HOW = ("**On the physical arm** (`bench/bench_physics.py`; the arm is sequence_ai/sim_physics.py, a MuJoCo Panda "
       "whose position servos lag their targets, run in real time in a process of its own, `bench/physical_arm.py`): "
       "first each joint's response to a target step from home, in 15 Hz control periods (docs/PHYSICS.md, "
       "docs/physics-step-response.png); then, at 0.7 s ±20 %, one run at a time, ours with its defaults, ours with "
       "the appending rule and the 0.20.0 client drive it through run() from home (`bench/physics_driver.py`: "
       "observe() reads the MEASURED joints and two rendered views, act() sets q_ref + row), toward the "
       "instruction's fixed goal and then the sweeping one. Backward yank = a control period in which a joint "
       f"with more than {FAR_RAD:g} rad to go steps back against its way to the goal by more than "
       f"{YANK_RAD * 1000:g} mrad; tracking = the target in force − the joints measured when the next one is set, "
       "over the periods whose command moved; "
       "the moving goal's RMS is over the measured joints. Render and physics costs are the arm process's own "
       "timings. **Through the node** (`bench/bench_physics_node.py`): sim_robot with `physics: mujoco` (cameras "
       "at 3 Hz, 320×180) and the policy node with config/policy.yaml (input ages widened to 2 s for a busy "
       "machine), its defaults and the appending rule (`take_over: false`), the same goals; each command as the "
       "planner receives it, beside the measured joints, interpolated on the arm's own stamps at the moment "
       "the node published it (its DDS source timestamp).")


def write_doc_figure(result: dict, path: str = FIGURE) -> Optional[str]:
    return plot_steps(result["steps"], path) if result.get("steps") else None


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--ours-only", action="store_true")
    parser.add_argument("--steps-only", action="store_true", help="only the step response (and its figure)")
    parser.add_argument("--figure", default=FIGURE, help="where the step response's figure goes ('' for none)")
    args = parser.parse_args(argv)
    if args.steps_only:
        result = {"steps": [step_response(STEP_RAD), step_response(LARGE_STEP_RAD)]}
    else:
        peer = None if args.ours_only else common.peer_python()
        result = measure(args.seconds, peer)
    if args.figure:
        print(f"wrote {write_doc_figure(result, args.figure)}", file=sys.stderr)
    from run_all import markdown_table

    print(markdown_table(physics_rows(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
