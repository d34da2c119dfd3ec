"""What recording a run costs the client: CPU per action with `record=` on, beside off.

    .venv/bin/python bench/bench_recording.py [--actions 150] [--rounds 3]

One local platform (worker latency 0.1 s ±20 %), one Policy, run() at the model's 15 Hz with a
no-op robot whose observe() returns two prebuilt textured 224×224 JPEG q95 views (what a
request carries after encode(), so encoding is not in either figure). Rounds alternate off / on
so both see the same machine; CPU per action is the process's process_time() (every thread: the
loop, refills, telemetry and the recorder's writer, whose file is finished inside run()) over
the round's actions; the figure is the median round. The recording modules (and mcap) are
imported before the first round, as on a robot that records every run. Also reported: the file's bytes per
action and the frames the recording dropped (0 unless the disk fell behind).
"""

from __future__ import annotations

import argparse
import base64
import io
import os
import statistics
import sys
import tempfile
import time
import warnings
from typing import Callable, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cost
import common

VIEWS = ("exterior_1", "wrist_left")


def _views() -> Dict[str, str]:
    from PIL import Image

    frames = {}
    for seed, view in enumerate(VIEWS):
        buffer = io.BytesIO()
        Image.fromarray(bench_cost.textured(224, 224, seed)).save(buffer, format="JPEG", quality=95)
        frames[view] = base64.b64encode(buffer.getvalue()).decode("ascii")
    return frames


def measure(actions: int = 150, rounds: int = 3, log: Callable[..., None] = print) -> Dict[str, float]:
    import sequence_ai
    from sequence_ai import ImageFrame, Observation, Proprioception
    from sequence_ai.recording import Recorder

    frames = _views()

    def observe() -> Observation:
        return Observation(images=[ImageFrame(view=v, data=d) for v, d in frames.items()],
                           proprioception=Proprioception(joint_positions=[0.0] * 7, gripper=[0.0]),
                           instruction="pick up the cup")

    cpu: Dict[bool, List[float]] = {False: [], True: []}
    sizes: List[float] = []
    dropped = 0
    folder = tempfile.mkdtemp(prefix="bench-recording-")
    Recorder(os.path.join(folder, "warm-up.mcap")).close()  # imports once per process, like a robot's
    with common.bench_platform(latency_s=0.1, jitter=0.2) as platform, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = platform.env()
        with sequence_ai.connect("pi05-droid", base_url=env["SEQUENCES_BASE_URL"],
                                 api_key=env["SEQUENCES_API_KEY"]) as policy:
            policy.predict(observe())
            for round_ in range(rounds):
                for recording in (False, True):
                    path = os.path.join(folder, f"round{round_}.mcap")
                    started = time.process_time()
                    outcome = policy.run(observe=observe, act=lambda a: None, validate=lambda a: True,
                                         max_actions=actions, progress=False, record=path if recording else None)
                    cpu[recording].append((time.process_time() - started) / max(1, outcome.actions) * 1000.0)
                    if recording:
                        sizes.append(os.path.getsize(path) / max(1, outcome.actions))
                        dropped += outcome.recording_frames_dropped
                        os.remove(path)
                    log(f"  recording {'on ' if recording else 'off'} round {round_ + 1}: "
                        f"{cpu[recording][-1]:.3f} ms CPU/action ({outcome.actions} actions, "
                        f"{outcome.underruns} underruns)")
    off, on = statistics.median(cpu[False]), statistics.median(cpu[True])
    return {"off_ms": off, "on_ms": on, "ratio": on / off if off else float("nan"),
            "bytes_per_action": statistics.median(sizes), "frames_dropped": dropped, "actions": actions,
            "rounds": rounds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actions", type=int, default=150, help="actions per round (15 Hz: 150 = 10 s)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    result = measure(args.actions, args.rounds)
    print(f"client CPU per action: off {result['off_ms']:.3f} ms, on {result['on_ms']:.3f} ms "
          f"({result['ratio']:.2f}x); {result['bytes_per_action'] / 1024:.1f} KiB/action; "
          f"{result['frames_dropped']} frames dropped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
