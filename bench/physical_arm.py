"""The physical arm (sequence_ai/sim_physics.py) as a process of its own, for `physics_driver.py`:
it runs in the workspace's Python (which has mujoco), so a driver in `.bench-venv/` (the 0.20.0
client) drives the same arm as ours.

    python physical_arm.py '{"home": [...], "size": [224, 224], "views": ["exterior_1", "wrist_left"]}'

The physics runs in real time on a thread of its own (each wake-up advances it by the wall-clock
time since the last, at most MAX_STEP_S). One JSON request per stdin line, one JSON answer per
stdout line:

    {"op": "observe"}               -> {"q": measured joints, "frames": {view: base64 JPEG}}
    {"op": "act", "target": [7]}    -> {"q": measured joints at the moment the target is set}
    {"op": "stats"}                 -> the physics' and the renders' cost, the simulated time
"""

from __future__ import annotations

import base64
import io
import json
import os
import sys
import threading
import time

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from sequence_ai.sim_physics import PandaPhysics

TICK_S, MAX_STEP_S = 0.002, 0.1


def jpeg_b64(frame) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(frame).save(buffer, format="JPEG", quality=90)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def main() -> int:
    spec = json.loads(sys.argv[1])
    arm = PandaPhysics(spec["home"])
    width, height = spec.get("size", (224, 224))  # what pi05-droid takes: no resize in the client
    views = spec.get("views", ("exterior_1", "wrist_left"))
    stop = threading.Event()
    started = time.monotonic()

    def physics() -> None:
        last = time.monotonic()
        while not stop.is_set():
            time.sleep(TICK_S)
            now = time.monotonic()
            arm.advance(min(MAX_STEP_S, now - last))
            last = now

    thread = threading.Thread(target=physics, daemon=True)
    thread.start()
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "observe":
            answer = {"q": arm.positions, "frames": {v: jpeg_b64(arm.render(v, width, height)) for v in views}}
        elif request["op"] == "act":
            answer = {"q": arm.positions}
            arm.command(request["target"], 0.0)
        else:
            answer = {"physics_s": arm.physics_s, "steps": arm.steps, "render_s": arm.render_s,
                      "renders": arm.renders, "sim_s": arm.time_s, "wall_s": time.monotonic() - started,
                      "size": [width, height]}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    stop.set()
    thread.join(1.0)
    arm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
