"""How the cost of an action grows with the camera frame size.

    .venv/bin/python bench/bench_cost.py [--sizes 640x360,1280x720,1920x1080] [--seconds 6]

One robot, one Policy, run() at 15 Hz against a worker answering at once; this time observe()
builds the observation from raw RGB frames of two cameras with `sequence_ai.observation()`
(resize to the model's 224×224 letterbox + JPEG q95 each request), as a robot would. CPU per
action is the process's process_time() over the run's actions.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from typing import Callable, Dict, List, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

HZ = 15.0


def textured(width: int, height: int, seed: int):
    """Gradient plus sensor noise: JPEG and resize work like on a camera image, not a flat fill."""
    import numpy as np

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    image = np.stack([x / width * 255, y / height * 255, (x + y) / (width + height) * 255], -1)
    image += rng.normal(0, 12, image.shape).astype(np.float32)
    return np.clip(image, 0, 255).astype(np.uint8)


def run_size(platform, size: Tuple[int, int], seconds: float) -> Dict[str, float]:
    import sequence_ai

    env = platform.env()
    frames = {view: textured(*size, seed) for seed, view in enumerate(("exterior_1", "wrist_left"))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with sequence_ai.connect("pi05-droid", base_url=env["SEQUENCES_BASE_URL"],
                                 api_key=env["SEQUENCES_API_KEY"]) as policy:
            model = policy.spec()

            def observe():
                return sequence_ai.observation(model, images=frames, joints=[0.0] * 7, gripper=[0.0],
                                               instruction="pick up the cup")

            policy.predict(observe())
            cpu0 = time.process_time()
            outcome = policy.run(observe=observe, act=lambda a: None, validate=lambda a: True,
                                 max_actions=int(seconds * HZ), progress=False)
            cpu = time.process_time() - cpu0
    return {"width": size[0], "height": size[1], "actions": outcome.actions, "underruns": outcome.underruns,
            "cpu_ms_per_action": cpu / max(1, outcome.actions) * 1000.0}


def measure(sizes: Sequence[Tuple[int, int]] = ((640, 360), (1280, 720), (1920, 1080)), seconds: float = 6.0,
            log: Callable[..., None] = print) -> List[Dict[str, float]]:
    results = []
    with common.bench_platform() as platform:
        for size in sizes:
            result = run_size(platform, size, seconds)
            results.append(result)
            log(f"  frames {size[0]}x{size[1]}: {result['cpu_ms_per_action']:.3f} ms CPU/action "
                f"({result['actions']} actions, {result['underruns']} underruns)")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="640x360,1280x720,1920x1080")
    parser.add_argument("--seconds", type=float, default=6.0)
    args = parser.parse_args()
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    measure(sizes, args.seconds)  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
