"""What the benchmarks share: paths, the peers' venv, the local platform with the bench plug-in,
percentiles and a small test frame."""

from __future__ import annotations

import base64
import io
import os
import sys
import time
from contextlib import contextmanager
from typing import Callable, Dict, Iterator, List, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.append(ROOT)  # after the workspace's install tree, which has the ROS interfaces
PUBLIC_VERSION = "0.20.0"  # requirements/scratch/bench.txt pins it
PLUGIN = "bench.bench_policy:delayed"


def peer_python() -> str:
    """The Python of `.bench-venv/`, with the public client and openpi-client installed from PyPI
    (made or brought up to date on first use: scripts/scratch_venv.py)."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        import scratch_venv
    finally:
        sys.path.pop(0)
    return scratch_venv.ensure("bench")


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, round(q / 100.0 * (len(ordered) - 1)))]


def jpeg_b64(width: int = 224, height: int = 224) -> str:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (90, 120, 110)).save(buffer, format="JPEG", quality=95)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


@contextmanager
def bench_platform(latency_s: float = 0.0, jitter: float = 0.0, log_path: Optional[str] = None,
                   frame_tag: bool = False, seed: int = 0, extra: Sequence[str] = (), stand_in: str = "") -> Iterator:
    """A LocalPlatform whose worker runs the stand-in behind `bench_policy.delayed` (`stand_in`
    "sweeping": the one whose goal moves)."""
    from sequence_ai.platform.spawn import LocalPlatform

    settings: Dict[str, str] = {"BENCH_LATENCY_S": str(latency_s), "BENCH_JITTER": str(jitter),
                                "BENCH_SEED": str(seed), "BENCH_POLICY_LOG": log_path or "",
                                "BENCH_FRAME_TAG": "1" if frame_tag else "0", "BENCH_STAND_IN": stand_in,
                                # the plug-in's package, after whatever install tree comes first
                                "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), ROOT) if p)}
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)  # the platform subprocess inherits them
    try:
        platform = LocalPlatform("--policy", PLUGIN, *extra).start()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    try:
        yield platform
    finally:
        platform.stop()


def read_log(path: str) -> List[dict]:
    import json

    if not os.path.exists(path):
        return []
    with open(path) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def wait_until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    """Whether `predicate()` held within `timeout_s` (looked at every 50 ms, once more at the end)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())
