"""Client CPU per action and underruns vs injected worker latency, ours vs the public 0.20.0 client.

    .venv/bin/python bench/bench_client.py                 # both clients, latencies 0.1-0.8 s
    .venv/bin/python bench/bench_client.py --ours-only     # skip the public client
    .venv/bin/python bench/bench_client.py --actions 60 --latencies 0.1,0.4

Starts one local platform, then for each injected /act latency runs each client in a process of
its own against the same worker: a warm-up predict(), then run() for N actions at the model's
15 Hz with a no-op robot (plus ours with lookahead=2, which can hide latency longer than a chunk). CPU time is the driver process's `time.process_time()` (all threads:
the loop, the refill threads, telemetry) divided by actions. The public client is installed by
this script into `.bench-venv/` (pip, `sequence-ai==0.20.0`) the first time.
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import venv

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_VENV = os.path.join(ROOT, ".bench-venv")
PUBLIC = "sequence-ai==0.20.0"

DRIVER = r'''
import json, sys, time, warnings
warnings.simplefilter("ignore")
import sequence_ai
frame_path, actions, lookahead = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = open(frame_path).read()
obs = sequence_ai.Observation(
    images=[sequence_ai.ImageFrame(view=v, data=data) for v in ("exterior_1", "wrist_left")],
    proprioception=sequence_ai.Proprioception(joint_positions=[0.0] * 7, gripper=[0.0]),
    instruction="pick up the cup")
with sequence_ai.connect("pi05-droid") as policy:
    policy.predict(obs)  # admission, TLS handshake, catalogue: not part of the measurement
    cpu0, wall0 = time.process_time(), time.perf_counter()
    out = policy.run(observe=lambda: obs, act=lambda a: None, validate=lambda a: True, max_actions=actions,
                     progress=False, lookahead=lookahead)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
print(json.dumps({"version": sequence_ai.__version__, "actions": out.actions, "chunks": out.chunks,
                  "underruns": out.underruns, "underrun_s": out.underrun_s, "cpu_s": cpu, "wall_s": wall,
                  "reason": out.reason}))
'''


def jpeg_224() -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (224, 224), (90, 120, 110)).save(buffer, format="JPEG", quality=95)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def public_python() -> str:
    python = os.path.join(BENCH_VENV, "bin", "python")
    if not os.path.exists(python):
        print(f"creating {BENCH_VENV} with {PUBLIC} ...", file=sys.stderr)
        venv.EnvBuilder(with_pip=True, clear=True).create(BENCH_VENV)
    check = subprocess.run([python, "-c", "import sequence_ai; print(sequence_ai.__version__)"],
                           capture_output=True, text=True, cwd=tempfile.gettempdir())
    if check.stdout.strip() != PUBLIC.split("==")[1]:
        subprocess.run([python, "-m", "pip", "install", "-q", PUBLIC], check=True)
    return python


def drive(python: str, env: dict, frame_path: str, actions: int, ours: bool, lookahead: int) -> dict:
    env = dict(env)
    if ours:
        env["PYTHONPATH"] = ROOT
    else:
        env.pop("PYTHONPATH", None)
    # Run from a neutral directory so the public client never imports this checkout by accident.
    result = subprocess.run([python, "-c", DRIVER, frame_path, str(actions), str(lookahead)], env=env,
                            capture_output=True,
                            text=True, cwd=tempfile.gettempdir(), timeout=300)
    if result.returncode != 0:
        return {"error": (result.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actions", type=int, default=90, help="actions per run (15 Hz: 90 = 6 s)")
    parser.add_argument("--latencies", default="0.1,0.2,0.4,0.8", help="injected /act latency, seconds")
    parser.add_argument("--ours-only", action="store_true", help="skip the public client")
    args = parser.parse_args()
    sys.path.insert(0, ROOT)
    from sequence_ai.platform.spawn import LocalPlatform

    latencies = [float(x) for x in args.latencies.split(",")]
    clients = [("ours", sys.executable, True, 1)]
    if not args.ours_only:
        try:
            clients.append(("public 0.20.0", public_python(), False, 1))
        except Exception as exc:  # no network, no pip: still bench our own client
            print(f"public client unavailable ({exc}); benchmarking ours only", file=sys.stderr)
    clients.append(("ours la=2", sys.executable, True, 2))  # two chunks in flight: hides latency > one chunk
    with tempfile.NamedTemporaryFile("w", suffix=".b64", delete=False) as frame:
        frame.write(jpeg_224())
    rows = []
    with LocalPlatform() as platform:
        env = {**os.environ, **platform.env()}
        for latency in latencies:
            for name, python, ours, lookahead in clients:
                platform.reset()
                platform.fault("latency", ms=latency * 1000.0)
                result = drive(python, env, frame.name, args.actions, ours, lookahead)
                rows.append((latency, name, result))
                print(f"  latency {latency:.1f}s  {name:<14} {summary(result)}", file=sys.stderr)
    os.unlink(frame.name)
    print_table(rows, [name for name, _, _, _ in clients])
    return 0


def summary(result: dict) -> str:
    if "error" in result:
        return f"error: {result['error']}"
    return (f"{result['cpu_s'] / max(1, result['actions']) * 1000:.2f} ms CPU/action, "
            f"{result['underruns']} underruns ({result['underrun_s']:.2f}s), {result['reason']}")


def print_table(rows: list, names: list) -> None:
    print(f"\nclient CPU per action and underruns vs injected /act latency ({time.strftime('%Y-%m-%d %H:%M')})")
    print(f"{'latency':>8}  {'client':<14} {'cpu ms/act':>10} {'underruns':>9} {'stall s':>8} {'chunks':>6}  reason")
    by_latency: dict = {}
    for latency, name, r in rows:
        by_latency.setdefault(latency, {})[name] = r
        if "error" in r:
            print(f"{latency:>7.1f}s  {name:<14} error: {r['error']}")
            continue
        print(f"{latency:>7.1f}s  {name:<14} {r['cpu_s'] / max(1, r['actions']) * 1000:>10.3f} "
              f"{r['underruns']:>9} {r['underrun_s']:>8.2f} {r['chunks']:>6}  {r['reason']}")
    if len(names) < 2 or not names[1].startswith("public"):
        return
    print(f"\nratios ours / {names[1]} (below 1 = ours is cheaper)")
    for latency, pair in by_latency.items():
        ours, theirs = pair.get(names[0], {}), pair.get(names[1], {})
        if "cpu_s" not in ours or "cpu_s" not in theirs:
            continue
        cpu = (ours["cpu_s"] / ours["actions"]) / max(1e-9, theirs["cpu_s"] / theirs["actions"])
        print(f"{latency:>7.1f}s  cpu/action {cpu:.2f}   underruns {ours['underruns']} vs {theirs['underruns']}")


if __name__ == "__main__":
    sys.exit(main())
