"""`sequence-ai export --format lerobot`: frames written per second, for a 15 s pi05-droid goal
with two 224×224 views (225 actions at 15 Hz, a request every 8 with both frames).

The recording is written here by the real Recorder (camera-like frames: a gradient with noise, so
PNG and JPEG cost what a camera's would); the export runs in the LeRobot scratch venv
(.lerobot-venv/, Python 3.12, lerobot 0.6.1), timed inside that process around the export
itself: the interpreter's start and lerobot's import (torch) are reported beside it, not in it. The
CPU time of that process over the export (all its threads) is reported too: on a machine others load,
the wall-clock rate falls and CPU seconds per frame stay put.

    python bench/bench_export.py            # installs the scratch venv if it is missing
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

HZ, VIEWS, ROWS_PER_REQUEST = 15.0, ("exterior_1", "wrist_left"), 8

CHILD = """
import json, sys, time
t0 = time.perf_counter()
from sequence_ai.recording.to_lerobot import require_lerobot
require_lerobot()
imported, cpu0 = time.perf_counter(), time.process_time()
from sequence_ai import cli
code = cli.main(["export", "--format", "lerobot", sys.argv[1], sys.argv[2]])
done, cpu = time.perf_counter(), time.process_time() - cpu0
print(json.dumps({"code": code, "import_s": imported - t0, "export_s": done - imported, "cpu_s": cpu}))
"""


def _frame(seed: int) -> bytes:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    ramp = np.linspace(0, 200, 224, dtype=np.float32)
    pixels = ramp[None, :, None] + ramp[:, None, None] * 0.2 + rng.normal(0, 12, (224, 224, 3))
    out = io.BytesIO()
    Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(out, format="JPEG", quality=90)
    return out.getvalue()


def write_goal(path: str, seconds: float) -> int:
    """A recorded goal of `seconds` at 15 Hz, as the node records one; the actions it holds."""
    from sequence_ai import RunOutcome
    from sequence_ai.recording import Recorder

    actions = int(seconds * HZ)
    names = [f"fr3_joint{i}" for i in range(1, 8)] + ["gripper"]
    t = time.monotonic()
    with Recorder(path, joint_names=names, camera_views=VIEWS) as recorder:
        recorder.run_started(model="pi05-droid", episode_id="bench", control_hz=HZ, t=t)
        recorder.instruction("pick up the red cube", t=t)
        for a in range(actions):
            at = t + a / HZ
            if a % ROWS_PER_REQUEST == 0:
                rid = f"r{a}"
                images = [{"view": v, "data": base64.b64encode(_frame(a * 2 + i)).decode()} for i, v in enumerate(VIEWS)]
                joints = [0.01 * a + 0.1 * j for j in range(7)]
                recorder.observation(rid, {"images": images, "proprioception": {"joint_positions": joints,
                                                                                "gripper": [0.5]}}, t=at)
                recorder.request(rid, "pick up the red cube", actions_at_submit=a, t=at)
                rows = [[0.01 * r] * 7 + [0.5] for r in range(15)]
                recorder.answer(rid, rows, sent_t=at, latency_s=0.05, action_space="joint_delta", control_hz=HZ,
                                t=at + 0.05)
            recorder.arm_command([*names[:7], "fr3_finger_joint1"], [0.01 * a] * 7 + [0.04], t=at + 0.06)
            recorder.command([0.01 * (a % ROWS_PER_REQUEST)] * 7 + [0.5], rid=rid, row_index=a % ROWS_PER_REQUEST,
                             t=at + 0.0601)
        recorder.hold("completed", t=t + actions / HZ)
        recorder.outcome(RunOutcome(actions=actions, chunks=-(-actions // ROWS_PER_REQUEST), elapsed_s=seconds,
                                    reason="completed"), t=t + actions / HZ)
    return actions


def scratch_python(install: bool) -> Optional[str]:
    """The LeRobot scratch venv's Python (made first when `install`), or None where there is none."""
    sys.path.insert(0, os.path.join(common.ROOT, "scripts"))
    import scratch_venv

    if not install:
        return scratch_venv.made("lerobot")
    try:
        return scratch_venv.ensure("lerobot")
    except scratch_venv.ScratchVenvError as exc:
        print(f"[export] {exc}", file=sys.stderr)
        return None


def measure(seconds: float = 15.0, install: bool = True, log=print) -> Dict:
    python = scratch_python(install)
    if python is None:
        return {"skipped": "the LeRobot scratch venv is not installed (scripts/workspace.sh scratch lerobot)"}
    with tempfile.TemporaryDirectory() as folder:
        recording, dataset = os.path.join(folder, "goal.mcap"), os.path.join(folder, "dataset")
        actions = write_goal(recording, seconds)
        log(f"[export] {actions} actions, two views: exporting with lerobot")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "AMENT", "ROS_", "_ROS"))
               and k != "LD_LIBRARY_PATH"}
        env.update(PYTHONPATH=common.ROOT, HF_HUB_OFFLINE="1")
        started = time.perf_counter()
        child = subprocess.run([python, "-c", CHILD, recording, dataset], capture_output=True, text=True, env=env,
                               cwd=folder)
        wall = time.perf_counter() - started
        if child.returncode != 0 or not child.stdout.strip():
            return {"error": (child.stderr.strip().splitlines() or ["no output"])[-1]}
        result = json.loads(child.stdout.splitlines()[-1])
        if result["code"] != 0:
            return {"error": f"export exited {result['code']}: {child.stderr.strip()[-300:]}"}
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(dataset) for f in files)
    return {"frames": actions, "views": len(VIEWS), "export_s": result["export_s"], "import_s": result["import_s"],
            "command_s": wall, "frames_per_s": actions / result["export_s"], "cpu_ms_per_frame":
            1000 * result["cpu_s"] / actions, "dataset_bytes": size}


if __name__ == "__main__":
    print(json.dumps(measure(log=lambda text: print(text, file=sys.stderr))))
