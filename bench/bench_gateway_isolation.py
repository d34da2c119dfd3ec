"""Does a busy gateway delay /act? The worker's round trip, idle and while four clients keep the
gateway busy with the largest depth requests it takes (64 images of 640×640 each).

Gateway and worker once shared one event loop, and four such requests pushed /act past a second,
beyond pi05-droid's open-loop window (8 actions at 15 Hz = 0.533 s). The worker now runs in a
process of its own (sequence_ai/platform/worker_process.py).

    .venv/bin/python bench/bench_gateway_isolation.py [--seconds 15] [--check]

--check exits 1 when the loaded maximum reaches the window (the default always exits 0).
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import sys
import threading
import time
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
import httpx
import numpy as np
from bench_worker import camera_frame
from PIL import Image

from sequence_ai.platform.spawn import LocalPlatform

WINDOW_S = 8 / 15.0  # pi05-droid: open_loop_horizon 8 at 15 Hz
LOADERS = 4


def depth_request(limit_bytes: int = 15 * 1024 * 1024) -> Dict[str, object]:
    """As many 640×640 noise JPEGs (the client's largest encode) as fit the gateway's body limit, up to 64."""
    pixels = np.random.default_rng(0).integers(0, 255, (640, 640, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "JPEG", quality=40)
    image = base64.b64encode(buf.getvalue()).decode()
    return {"model": "depth-anything-v2-small", "task": "depth", "images": [image] * min(64, limit_bytes // len(image))}


def act_request() -> Dict[str, object]:
    return {"model": "pi05-droid", "episode_id": "isolation", "seed": 7, "observation": {
        "images": [{"view": "exterior_1", "data": camera_frame(1)}, {"view": "wrist_left", "data": camera_frame(2)}],
        "proprioception": {"joint_positions": [0.0, -0.5, 0.0, -2.1, 0.0, 1.6, 0.78], "gripper": [0.0]},
        "instruction": "pick up the cup"}}


def measure(platform: LocalPlatform, seconds: float, loaders: int = LOADERS, pause_s: float = 0.1,
            wait_for_loaders: bool = True) -> Dict[str, List[float]]:
    """/act round trips (s) while `loaders` clients post depth requests, and the worker's own time on
    each (its request log: arrival to the start of the answer); how long each depth request took,
    and how many were in flight at each /act. Without `wait_for_loaders` the depth requests still
    running at the end are left to the platform's stop."""
    key = {"Authorization": f"Bearer {platform.api_key}"}
    grant = httpx.post(platform.base_url + "/v1/act/connect", json={"model": "pi05-droid"}, headers=key,
                       timeout=30.0).json()
    depth, act = depth_request(), act_request()
    stop = threading.Event()
    lock = threading.Lock()
    depth_s: List[float] = []
    in_flight = [0]
    failures: List[str] = []

    def load() -> None:
        with httpx.Client(timeout=120.0, headers=key) as client:
            while not stop.is_set():
                t0 = time.perf_counter()
                with lock:
                    in_flight[0] += 1
                try:
                    answer = client.post(platform.base_url + "/v1/perceive", json=depth)
                except httpx.HTTPError as err:
                    failures.append(repr(err))
                    return
                finally:
                    with lock:
                        in_flight[0] -= 1
                if answer.status_code != 200:
                    failures.append(answer.text[:200])
                    return
                depth_s.append(time.perf_counter() - t0)

    threads = [threading.Thread(target=load, daemon=True) for _ in range(loaders)]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    while in_flight[0] < loaders and not failures and time.monotonic() - started < 30.0:
        time.sleep(0.01)  # every loader has a request out before the first /act
    act_s: List[float] = []
    busy: List[float] = []
    # The pin is checked by the platform's own tests; here only timing matters.
    with httpx.Client(base_url=grant["worker_url"], verify=False, timeout=30.0,
                      headers={"Authorization": f"Bearer {grant['direct_secret']}"}) as worker:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            t0 = time.perf_counter()
            worker.post("/act", json=act).raise_for_status()
            act_s.append(time.perf_counter() - t0)
            busy.append(float(in_flight[0]))
            time.sleep(pause_s)  # a robot asks about twice a second; this asks ten times
    # The worker's records of these /act requests (the last may be answered before it is written).
    served = [r["worker_ms"] / 1000.0 for r in platform.requests(limit=len(act_s))]
    stop.set()
    if wait_for_loaders:
        for thread in threads:
            thread.join()
        if failures:
            raise RuntimeError(f"a depth request failed: {failures[0]}")
    return {"act_s": act_s, "worker_s": served, "depth_s": depth_s, "in_flight": busy}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--check", action="store_true", help="exit 1 if the loaded max reaches the open-loop window")
    args = parser.parse_args(argv)
    with LocalPlatform() as platform:
        idle = measure(platform, args.seconds / 3, loaders=0)
        loaded = measure(platform, args.seconds)
    print(f"worker /act round trip (ms), {LOADERS} clients posting {len(depth_request()['images'])}-image depth "
          f"requests meanwhile ({len(loaded['depth_s'])} done, p50 {common.percentile(loaded['depth_s'], 50):.2f} s each)")
    print(f"{'':<10}{'n':>6}{'p50':>10}{'p99':>10}{'max':>10}")
    rows = (("idle", idle["act_s"]), ("loaded", loaded["act_s"]), ("  worker", loaded["worker_s"]))
    for name, values in rows:  # "worker": the loaded run's /act requests by the worker's own clock
        ms = [v * 1000.0 for v in values]
        print(f"{name:<10}{len(ms):>6}{common.percentile(ms, 50):>10.1f}{common.percentile(ms, 99):>10.1f}{max(ms):>10.1f}")
    met = max(loaded["act_s"]) < WINDOW_S
    print(f"goal loaded max < {WINDOW_S * 1000:.0f} ms (pi05-droid's open-loop window): {'met' if met else 'MISSED'}")
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
