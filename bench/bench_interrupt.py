"""Interrupt → hold latency of our client, while playing, stalled on a refill in flight, warming,
and reconnecting.

    .venv/bin/python bench/bench_interrupt.py [--trials 6]

Each trial: a fresh Policy on the local platform (stand-in policy), put into the state, then
`interrupt()` from another thread at a random moment inside it; the latency is the time from that
call to the run's `hold()` callback (same process, perf_counter). Goal: max ≤ one control period.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import threading
import time
import warnings
from typing import Callable, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

STATES = ("playing", "in flight", "warming", "reconnecting")


def _observation(sequence_ai):
    data = common.jpeg_b64()
    return sequence_ai.Observation(
        images=[sequence_ai.ImageFrame(view=v, data=data) for v in ("exterior_1", "wrist_left")],
        proprioception=sequence_ai.Proprioception(joint_positions=[0.0] * 7, gripper=[0.0]),
        instruction="pick up the cup")


def trial(platform, state: str, rng: random.Random) -> Optional[float]:
    """Seconds from interrupt() to hold(), or None if hold never came."""
    import sequence_ai

    platform.reset()
    obs = _observation(sequence_ai)
    held: List[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        policy = sequence_ai.connect("pi05-droid", **platform_kwargs(platform))
        try:
            if state == "warming":
                platform.fault("warming", seconds=30)
                delay = rng.uniform(0.4, 1.2)
            else:
                policy.predict(obs)  # 8 rows buffered, connection admitted
                if state == "playing":
                    delay = rng.uniform(0.1, 0.5)
                elif state == "in flight":
                    platform.fault("latency", ms=5000)
                    delay = rng.uniform(0.7, 1.4)  # the 8 rows ran dry at 0.53 s: waiting on the refill
                else:
                    platform.fault("worker_down")
                    delay = rng.uniform(0.7, 1.4)  # the refill failed at once: backing off, reconnecting
            runner = threading.Thread(target=lambda: _run(policy, obs, held), daemon=True)
            runner.start()
            time.sleep(delay)
            asked = time.perf_counter()
            policy.interrupt()
            runner.join(10.0)
        finally:
            platform.clear_faults()
            policy.close()
    return held[0] - asked if held else None


def _run(policy, obs, held: List[float]) -> None:
    try:
        policy.run(observe=lambda: obs, act=lambda a: None, validate=lambda a: True, max_actions=100000,
                   hold=lambda: held.append(time.perf_counter()), progress=False, max_seconds=60, on_warming=lambda *_: None)
    except Exception:
        pass


def platform_kwargs(platform) -> Dict[str, str]:
    env = platform.env()
    return {"base_url": env["SEQUENCES_BASE_URL"], "api_key": env["SEQUENCES_API_KEY"]}


def measure(trials: int = 6, seed: int = 1, log: Callable[..., None] = print) -> Dict[str, List[Optional[float]]]:
    """state -> interrupt→hold latencies in seconds (None: no hold)."""
    from sequence_ai.platform.spawn import LocalPlatform

    rng = random.Random(seed)
    results: Dict[str, List[Optional[float]]] = {state: [] for state in STATES}
    with LocalPlatform() as platform:
        for _ in range(trials):
            for state in STATES:
                results[state].append(trial(platform, state, rng))
    for state, values in results.items():
        shown = ", ".join("none" if v is None else f"{v * 1000:.1f}" for v in values)
        log(f"  interrupt → hold, {state}: {shown} ms")
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=6)
    args = parser.parse_args()
    measure(args.trials)
    return 0


if __name__ == "__main__":
    sys.exit(main())
