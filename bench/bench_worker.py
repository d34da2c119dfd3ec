"""Worker handler time for a two-view pi05-droid request at 224×224 (the model's client_resize).

Starts the local platform in a subprocess, connects, sends a few hundred /act requests over one
pinned keep-alive TLS connection and reports the worker's own perf.handler_ms (its outermost
wall-time span, minus any injected latency) and the client-side round trip, p50/p99.
Goal: handler p50 < 5 ms.

    .venv/bin/python bench/bench_worker.py [--requests 400] [--check]

--check exits 1 when the goal is missed (the default always exits 0: it is a measurement).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import os
import ssl
import statistics
import sys
import time
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
import httpx
import numpy as np
from PIL import Image

from sequence_ai.platform.spawn import LocalPlatform

GOAL_P50_MS = 5.0


def camera_frame(seed: int) -> str:
    """A 224×224 JPEG (q95) with texture, so its size is like a real camera frame's, not a flat fill's."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:224, 0:224]
    base = np.stack([(x + y) % 256, (x * 2) % 256, (y * 3) % 256], axis=-1).astype(np.float32)
    pixels = np.clip(base + rng.normal(0, 12, base.shape), 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "JPEG", quality=95)
    return base64.b64encode(buf.getvalue()).decode()


percentile = common.percentile


def measure(requests: int = 400, warmup: int = 30) -> Dict[str, List[float]]:
    """{"handler_ms": worker perf.handler_ms minus injected, "rtt_ms": client round trip}."""
    frames = [camera_frame(1), camera_frame(2)]
    body = {
        "model": "pi05-droid",
        "observation": {
            "images": [{"view": "exterior_1", "data": frames[0], "timestamp_ms": None},
                       {"view": "wrist_left", "data": frames[1], "timestamp_ms": None}],
            "proprioception": {"joint_positions": [0.0, -0.5, 0.0, -2.1, 0.0, 1.6, 0.78], "joint_velocities": None,
                               "end_effector_pose": None, "gripper": [0.0]},
            "instruction": "pick up the cup",
        },
        "seed": 7,
        "episode_id": "bench",
    }
    with LocalPlatform() as platform:
        answer = httpx.post(platform.base_url + "/v1/act/connect", json={"model": "pi05-droid", "session": "b" * 32},
                            headers={"Authorization": f"Bearer {platform.api_key}"}).json()
        host, port = answer["worker_url"].split("://", 1)[1].rsplit(":", 1)
        served = hashlib.sha256(ssl.PEM_cert_to_DER_cert(ssl.get_server_certificate((host, int(port))))).hexdigest()
        if served != answer["cert_fingerprint"]:
            raise RuntimeError("certificate does not match the pin")
        handler, rtt = [], []
        with httpx.Client(base_url=answer["worker_url"], verify=False, timeout=10.0,
                          headers={"Authorization": f"Bearer {answer['direct_secret']}"}) as worker:
            for i in range(warmup + requests):
                t0 = time.perf_counter()
                r = worker.post("/act", json=body, headers={"X-Seq-Request-Id": f"r-{i:08x}"})
                elapsed = (time.perf_counter() - t0) * 1000.0
                r.raise_for_status()
                perf = r.json()["perf"]
                if i >= warmup:
                    handler.append(perf["handler_ms"] - perf.get("injected_ms", 0.0))
                    rtt.append(elapsed)
    return {"handler_ms": handler, "rtt_ms": rtt}


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--check", action="store_true", help="exit 1 if handler p50 misses the goal")
    args = parser.parse_args(argv)
    result = measure(args.requests, args.warmup)
    handler, rtt = result["handler_ms"], result["rtt_ms"]
    frames = [camera_frame(1)]
    size_kb = len(frames[0]) * 3 / 4 / 1024
    print(f"worker /act, pi05-droid, 2 views 224x224 JPEG q95 (~{size_kb:.0f} KB each), {args.requests} requests")
    print(f"{'measure':<28}{'p50 ms':>10}{'p99 ms':>10}{'mean ms':>10}")
    for name, values in (("worker perf.handler_ms", handler), ("client round trip (TLS)", rtt)):
        print(f"{name:<28}{percentile(values, 50):>10.3f}{percentile(values, 99):>10.3f}{statistics.mean(values):>10.3f}")
    met = percentile(handler, 50) < GOAL_P50_MS
    print(f"goal handler p50 < {GOAL_P50_MS:g} ms: {'met' if met else 'MISSED'}")
    return 1 if args.check and not met else 0


if __name__ == "__main__":
    sys.exit(main())
