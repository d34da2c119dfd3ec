"""In front of one openpi server: this client's run() against openpi's own client, on the same server.

    .venv/bin/python bench/bench_openpi.py [--seconds 40]

One openpi `WebsocketPolicyServer` (the openpi-server package, in its scratch venv) serves the sweeping
stand-in (sequence_ai/platform/openpi_standin.py --sweeping) behind 0.7 s ±20 % (uniform), blocking its
event loop while it "infers" as a real checkpoint does. On it, one after the other (a serial server:
at once they would slow each other), a kinematic arm from the same home pose is driven by

* ours — `run()` with its defaults, `connect("pi05-droid")` with SEQUENCES_BASE_URL=ws://… (the
  shipped pi05_droid card), by `latency_driver.py` as in bench_latency.py;
* peer — openpi-client's `WebsocketClientPolicy` + `ActionChunkBroker` at 15 Hz, open-loop horizon 8,
  as openpi's DROID example drives the robot (`openpi_peer_driver.py`).

Figures per run as bench_latency.py's: held share, requests per second of motion, age and lateness
p50, largest step ÷ median step, and the RMS distance from the moving goal (from SWEEP_FROM_S on).

The physical bound: a serial server at latency L answers at most 1/L requests a second, and a chunk
holds H/hz seconds of motion (pi05_droid: 15 rows at 15 Hz = 1.0 s). While H/hz exceeds the
slowest answer (0.7 s + 20 % = 0.84 s) one server can feed the arm, and held ≤ 1 % is the goal.
A second request in flight only queues at such a server (its observation aging meanwhile), so the
link says it takes one at a time (`OpenpiConnection.max_in_flight`) and the schedule keeps to one:
requests go back to back, and what plays is from L to 2L old — p50 about 1.5 L while the arm never
stops. `--variants '{"name": {run() kwargs}}'` runs more of ours beside it on the same server.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
from typing import List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_latency
import common
from table import Row, verdict

LATENCY_S, JITTER = 0.7, 0.2
ROWS_PER_CHUNK = 15  # pi05_droid's action_horizon
# What a real client may add to `serial_floor`: the policy's own approach, encoding and transport, and
# a join that moves the arm to each new chunk smoothly instead of in one step.
FLOOR_MARGIN = 1.15
PEER_DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "openpi_peer_driver.py")


def _openpi_python(install: bool) -> Optional[str]:
    """The openpi scratch venv's Python (made first when `install`), or None where there is none."""
    sys.path.insert(0, os.path.join(common.ROOT, "scripts"))
    try:
        import scratch_venv
    finally:
        sys.path.pop(0)
    return scratch_venv.ensure("openpi") if install else scratch_venv.made("openpi")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def _plain_env(python_path: str) -> dict:
    prefixes = ("PYTHON", "AMENT", "ROS_", "COLCON", "CMAKE", "_ROS", "VIRTUAL_ENV", "SEQUENCES_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes) and k != "LD_LIBRARY_PATH"}
    if python_path:
        env["PYTHONPATH"] = python_path
    return env


def _run(command: List[str], env: dict) -> dict:
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir(), timeout=900)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def through_the_node(url: str, seconds: float) -> dict:
    """One `act` goal through the policy node (policy_url: the server, model: the shipped card) on the
    simulated arm, as bench_ros_latency.py runs it; {"error": why} without ROS."""
    try:
        import bench_ros_latency
        import rclpy  # noqa: F401
    except ImportError as exc:
        return {"error": f"ROS not importable ({exc})"}
    return bench_ros_latency.case(LATENCY_S, seconds, {"model": "pi05_droid"}, 500, policy_url=url)


def measure(seconds: float = 40.0, log=print, variants: Optional[dict] = None, install: bool = True) -> dict:
    """{"ours", "peer", "node": figures (bench_latency.figures), "latency_s", "jitter"}, or {"skipped": why}
    without the openpi scratch venv (made first when `install`)."""
    from sequence_ai.platform.policies import sweep_goal

    openpi_python = _openpi_python(install)
    if openpi_python is None:
        return {"skipped": "the openpi scratch venv is not installed (scripts/workspace.sh scratch openpi)"}
    port = _free_port()
    url = f"ws://127.0.0.1:{port}"
    server = subprocess.Popen([openpi_python, "-m", "sequence_ai.platform.openpi_standin", "--port", str(port),
                               "--latency-ms", str(LATENCY_S * 1000), "--jitter", str(JITTER), "--sweeping"],
                              env=_plain_env(common.ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    tmp = tempfile.mkdtemp(prefix="bench-openpi-")
    frame_path = os.path.join(tmp, "frame.b64")
    with open(frame_path, "w") as handle:
        handle.write(common.jpeg_b64())
    spec = {"seconds": seconds, "instruction": bench_latency.INSTRUCTION, "home": bench_latency.HOME,
            "kwargs": {}, "swaps": [], "hz": bench_latency.HZ}
    out: dict = {"latency_s": LATENCY_S, "jitter": JITTER, "seconds": seconds}
    try:
        if not common.wait_until(lambda: _accepts(port) or server.poll() is not None, 120.0) or server.poll() is not None:
            raise RuntimeError("the openpi stand-in server did not start")
        from_s = min(bench_latency.SWEEP_FROM_S, seconds / 2)

        def moving(t: float):
            return sweep_goal(bench_latency.INSTRUCTION, t)

        ours_env = {**_plain_env(os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), common.ROOT) if p)),
                    "SEQUENCES_BASE_URL": url}
        for name, kwargs in (variants or {"ours": {}}).items():
            ours = _run([sys.executable, bench_latency.DRIVER, frame_path, json.dumps({**spec, "kwargs": kwargs})],
                        ours_env)
            if name == "ours" and ours.get("log"):
                out["floor_rms_rad"] = serial_floor(LATENCY_S, JITTER, seconds, from_s, moving, ours["log"][0][1])
            out[name] = bench_latency.figures(ours, moving=moving, from_s=from_s)
            log(f"  openpi server {LATENCY_S:.1f}s ±{JITTER:.0%}: {name} {bench_latency.summary(out[name])}")
        peer = _run([openpi_python, PEER_DRIVER, frame_path, json.dumps({**spec, "url": url, "horizon": 8})],
                    _plain_env(""))
        out["peer"] = bench_latency.figures(peer, moving=moving, from_s=from_s)
        log(f"  openpi server {LATENCY_S:.1f}s ±{JITTER:.0%}: peer {bench_latency.summary(out['peer'])}")
        out["node"] = through_the_node(url, seconds)
        log(f"  openpi server {LATENCY_S:.1f}s ±{JITTER:.0%}: node {out['node'].get('error') or bench_latency.summary(out['node'])}")
    finally:
        server.kill()
        server.wait(timeout=30)
    return out


def serial_floor(latency_s: float, jitter: float, seconds: float, from_s: float, moving, wall_start: float,
                 hz: float = bench_latency.HZ, seeds: int = 5) -> float:
    """The moving goal's RMS of the best any client can do on one serial server: every answer
    lands L (drawn as the server draws it) after its request, the next request goes the moment it
    lands (the server is free again; a request sent earlier would only wait, its observation aging),
    and from the first tick after it lands the arm stands exactly where the goal was when that
    request was asked: no policy lag, no transport, no join. Averaged over `seeds` draws, on the wall
    clock span of the run it is set beside."""
    import random

    total = []
    for seed in range(seeds):
        draw = random.Random(seed)
        asked, lands, in_force = 0.0, latency_s * (1 + draw.uniform(-jitter, jitter)), None
        for k in range(int(seconds * hz)):
            t = k / hz
            while lands <= t:
                in_force, asked = asked, lands
                lands = asked + latency_s * (1 + draw.uniform(-jitter, jitter))
            if in_force is not None and t >= from_s:
                total.extend((q - g) ** 2 for q, g in zip(moving(wall_start + in_force), moving(wall_start + t)))
    return math.sqrt(sum(total) / len(total)) if total else float("nan")


def openpi_rows(result: dict) -> List[Row]:
    """The rows of `measure()` for the table: ours vs openpi-client + ActionChunkBroker, with the issue's goals."""
    if "skipped" in result:
        return [Row("openpi server: run() vs openpi-client", f"skipped: {result['skipped']}")]
    ours, peer = result.get("ours", {}), result.get("peer", {})
    at = f"openpi server {result['latency_s']:.1f} s ±{result['jitter']:.0%}"
    if "error" in ours or "error" in peer or not ours or not peer:
        return [Row(f"{at}: run()", f"error: {ours.get('error', '?')}", f"error: {peer.get('error', '-')}",
                    verdict="FAIL")]
    slowest = result["latency_s"] * (1 + result["jitter"])
    chunk_s = ROWS_PER_CHUNK / bench_latency.HZ
    feeds = slowest < chunk_s
    bound = (f"≤ 1 % (a chunk holds {chunk_s:.2f} s > slowest answer {slowest:.2f} s)"
             if feeds else f"physical bound: a chunk holds {chunk_s:.2f} s < the slowest answer {slowest:.2f} s")
    # Moving all the time on one serial server, what plays is from L to 2L old (p50 ≈ 1.5 L); the
    # peer's played rows are only those of the ticks it moves (it stands still through every request),
    # so the age judged is the one of what the arm is told at every tick, the held ones included.
    age_floor = 1.5 * result["latency_s"]
    floor = result.get("floor_rms_rad", float("nan"))
    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}×" if b else "—"

    node = result.get("node") or {"error": "not run"}
    node_rows = [Row(f"{at}, through the node: {what}", "error: " + node["error"][:80], verdict="FAIL")
                 for what in ("held share",)] if "error" in node else [
        Row(f"{at}, through the node: held share", f"{node['held_share']:.1%}", f"{peer['held_share']:.1%}",
            ratio(node["held_share"], peer["held_share"]), bound, verdict(node["held_share"] <= 0.01) if feeds else "—"),
        Row(f"{at}, through the node: requests per second of motion", f"{node['requests_per_s']:.2f}",
            f"{peer['requests_per_s']:.2f}", ratio(node["requests_per_s"], peer["requests_per_s"])),
        Row(f"{at}, through the node: age p50 / lateness p50", f"{node['age_p50_s']:.3f} s / "
            f"{node['lateness_p50_s']:.3f} s", f"{peer['age_p50_s']:.3f} s / {peer['lateness_p50_s']:.3f} s"),
        Row(f"{at}, through the node: largest step ÷ median step", f"{node['step_ratio']:.2f}",
            f"{peer['step_ratio']:.2f}")]
    rows = [
        Row(f"{at}: held share", f"{ours['held_share']:.1%}", f"{peer['held_share']:.1%}",
            ratio(ours["held_share"], peer["held_share"]), bound,
            verdict(ours["held_share"] <= 0.01) if feeds else "—"),
        Row(f"{at}: requests per second of motion", f"{ours['requests_per_s']:.2f}", f"{peer['requests_per_s']:.2f}",
            ratio(ours["requests_per_s"], peer["requests_per_s"])),
        Row(f"{at}: age p50 of the command in force at each tick (held ticks hold an aging one)",
            f"{ours['age_in_force_p50_s']:.3f} s", f"{peer['age_in_force_p50_s']:.3f} s",
            ratio(ours["age_in_force_p50_s"], peer["age_in_force_p50_s"]), "≤ peer",
            verdict(ours["age_in_force_p50_s"] <= peer["age_in_force_p50_s"])),
        Row(f"{at}: age p50 of the rows played", f"{ours['age_p50_s']:.3f} s", f"{peer['age_p50_s']:.3f} s",
            ratio(ours["age_p50_s"], peer["age_p50_s"]), f"— (moving throughout: ≥ 1.5 L = {age_floor:.2f} s)"),
        Row(f"{at}: lateness p50", f"{ours['lateness_p50_s']:.3f} s", f"{peer['lateness_p50_s']:.3f} s"),
        Row(f"{at}: largest step ÷ median step", f"{ours['step_ratio']:.2f}", f"{peer['step_ratio']:.2f}"),
        Row(f"{at}: moving-goal RMS (the target in force at each tick)", f"{ours['rms_rad']:.4f} rad",
            f"{peer['rms_rad']:.4f} rad", ratio(ours["rms_rad"], peer["rms_rad"]),
            f"≤ {FLOOR_MARGIN:g}× the serial floor {floor:.4f} rad (= {floor / peer['rms_rad']:.2f}× peer), < peer",
            verdict(ours["rms_rad"] <= FLOOR_MARGIN * floor and ours["rms_rad"] < peer["rms_rad"])),
    ]
    rows.extend(node_rows)
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--variants", default=None, help='JSON {name: run() kwargs} to try beside ours')
    args = parser.parse_args(argv)
    started = time.monotonic()
    result = measure(args.seconds, variants=json.loads(args.variants) if args.variants else None)
    for row in openpi_rows(result):
        print(f"{row.metric:<60} ours {row.ours:<14} peer {row.peer:<14} {row.ratio:<8} {row.goal} {row.verdict}")
    print(f"({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
