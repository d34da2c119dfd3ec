"""A worker plug-in for the benchmarks: the stand-in policy behind a measured inference delay.

    LocalPlatform("--policy", "bench.bench_policy:delayed")     # configured by the environment:

    BENCH_LATENCY_S   seconds each /act spends "in the model" (default 0)
    BENCH_JITTER      uniform jitter as a fraction (0.2 = ±20 %)
    BENCH_SEED        seed of the latency draws (default 0)
    BENCH_POLICY_LOG  append one JSON line per call: arrival time, instruction, latency_s (drawn),
                      slept_s (measured around the sleep), frame tag
    BENCH_FRAME_TAG   "1": read the frame counter the ROS bench paints into exterior_1
    BENCH_STAND_IN    "sweeping": the stand-in whose goal moves (`policies.sweeping`, seen at the
                      request's arrival); otherwise the one toward the instruction's fixed goal

The delay is worker time like the platform's `latency` fault, but its realised value is logged, so
the underrun bench can compute the physical minimum stall from the latencies that really occurred.
"""

from __future__ import annotations

import json
import os
import queue
import random
import threading
import time
from typing import Any, List, Optional

from sequence_ai.platform.policies import stand_in, sweeping

TAG_BITS = 16
_lock = threading.Lock()
_random = random.Random(int(os.environ.get("BENCH_SEED", "0")))


def delayed(inp: Any) -> List[List[float]]:
    arrived = time.time()
    base = float(os.environ.get("BENCH_LATENCY_S", "0") or 0.0)
    jitter = float(os.environ.get("BENCH_JITTER", "0") or 0.0)
    with _lock:
        latency = base * (1.0 + _random.uniform(-jitter, jitter)) if base > 0 else 0.0
    tag = read_tag(inp.images["exterior_1"]) if os.environ.get("BENCH_FRAME_TAG") == "1" else None
    slept = 0.0
    if latency > 0:
        started = time.perf_counter()
        time.sleep(latency)
        slept = time.perf_counter() - started  # a sleep overruns what it was asked for
    log = os.environ.get("BENCH_POLICY_LOG")
    if log:
        _log_later(log, {"time": arrived, "instruction": inp.instruction, "latency_s": latency, "slept_s": slept,
                         "tag": tag})
    if os.environ.get("BENCH_STAND_IN") == "sweeping":
        return sweeping(inp, observed_at=arrived)  # the goal where it was when the request came, not after the delay
    return stand_in(inp)


_lines: queue.SimpleQueue = queue.SimpleQueue()
_writer: Optional[threading.Thread] = None


def _log_later(path: str, entry: dict) -> None:
    """The log is written by a thread of its own: opening and appending a file is not the
    model's time and must not delay the answer whose latency it records."""
    global _writer
    with _lock:
        if _writer is None:
            _writer = threading.Thread(target=_write_lines, name="bench-policy-log", daemon=True)
            _writer.start()
    _lines.put((path, entry))


def _write_lines() -> None:
    while True:
        path, entry = _lines.get()
        with open(path, "a") as handle:
            handle.write(json.dumps(entry) + "\n")


def read_tag(image: Any) -> Optional[int]:
    """The counter painted as TAG_BITS black/white vertical stripes across the frame (see
    bench_ros_jitter.paint_tag); survives the letterbox resize and JPEG."""
    height, width = image.shape[:2]
    row = image[height // 2]
    value = 0
    for bit in range(TAG_BITS):
        x = int((bit + 0.5) * width / TAG_BITS)
        if int(row[x].mean()) > 127:
            value |= 1 << bit
    return value
