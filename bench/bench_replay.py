"""What reading a real recording takes, per minute of run, and how long a run each cap of the reader
(`sequence_ai.recording.ReadLimits`) allows: the figures behind the caps in docs/RECORDING.md.

    scripts/workspace.sh run python bench/bench_replay.py [--actions 300]

One local platform (worker latency 0.1 s ±20 %), run() of pi05-droid at its 15 Hz with two textured
224×224 JPEG q95 views (what a request carries after encode()), recorded the way the ROS node
records a goal: the run's own events, plus one /policy/arm_command per action and a
/policy/feedback every 0.25 s (the node's default feedback_period_s). The file is then read back:
records in it, bytes decompressed, bytes of the messages the reader decodes, and the time
read_run() takes (median of 3), each per minute of run, and the hours of such a run each cap is.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import warnings
from typing import Callable, Dict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_recording
import common

JOINTS = [f"fr3_joint{i}" for i in range(1, 8)] + ["fr3_finger_joint1"]


def record_a_run(path: str, actions: int, log: Callable[..., None]) -> float:
    """Record one node-shaped run to `path`; its length in seconds."""
    import sequence_ai
    from sequence_ai import ImageFrame, Observation, Proprioception
    from sequence_ai.recording import Recorder

    frames = bench_recording._views()

    def observe() -> Observation:
        return Observation(images=[ImageFrame(view=v, data=d) for v, d in frames.items()],
                           proprioception=Proprioception(joint_positions=[0.0] * 7, gripper=[0.0]),
                           instruction="pick up the cup")

    with common.bench_platform(latency_s=0.1, jitter=0.2) as platform, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = platform.env()
        with sequence_ai.connect("pi05-droid", base_url=env["SEQUENCES_BASE_URL"],
                                 api_key=env["SEQUENCES_API_KEY"]) as policy, Recorder(path) as recorder:
            policy.predict(observe())
            done = threading.Event()

            def feedback() -> None:  # the node's action feedback, every feedback_period_s
                while not done.wait(0.25):
                    recorder.feedback(policy.progress())

            feeder = threading.Thread(target=feedback, daemon=True)
            feeder.start()
            outcome = policy.run(observe=observe, act=lambda a: recorder.arm_command(JOINTS, a),
                                 validate=lambda a: True, max_actions=actions, progress=False, record=recorder)
            done.set()
            feeder.join()
            recorder.outcome(outcome)
    log(f"  recorded {outcome.actions} actions in {outcome.elapsed_s:.1f} s ({outcome.chunks} chunks)")
    return outcome.elapsed_s


def usage(path: str) -> Dict[str, float]:
    """Records, bytes decompressed and bytes decoded: what the reader's caps count."""
    from mcap.records import Channel, Message

    from sequence_ai.recording.reader import _KEPT
    from sequence_ai.recording.walk import Budget, ReadLimits, records

    budget = Budget(ReadLimits())
    kept, decoded = set(), 0
    with open(path, "rb") as stream:
        for item in records(stream, os.fstat(stream.fileno()).st_size, budget):
            if isinstance(item, Channel) and item.topic in _KEPT:
                kept.add(item.id)
            elif isinstance(item, Message) and item.channel_id in kept:
                decoded += len(item.data)
    return {"records": budget.records, "decompressed": budget.decompressed, "decoded": decoded}


def measure(actions: int = 300, log: Callable[..., None] = print) -> Dict[str, float]:
    from sequence_ai.recording import ReadLimits, read_run

    path = os.path.join(tempfile.mkdtemp(prefix="bench-replay-"), "run.mcap")
    seconds = record_a_run(path, actions, log)
    used = usage(path)
    reads = []
    for _ in range(3):
        started = time.perf_counter()
        read_run(path)
        reads.append(time.perf_counter() - started)
    per_minute = 60.0 / seconds
    limits = ReadLimits()
    result = {"run_s": seconds, "file_bytes": os.path.getsize(path),
              "records_per_min": used["records"] * per_minute,
              "decompressed_per_min": used["decompressed"] * per_minute,
              "decoded_per_min": used["decoded"] * per_minute,
              "read_s_per_min": statistics.median(reads) * per_minute}
    result["hours"] = {  # how long a run of this shape each cap allows
        "records": limits.records / result["records_per_min"] / 60.0,
        "decompressed_bytes": limits.decompressed_bytes / result["decompressed_per_min"] / 60.0,
        "decoded_bytes": limits.decoded_bytes / result["decoded_per_min"] / 60.0,
        "seconds": limits.seconds / result["read_s_per_min"] / 60.0,
    }
    os.remove(path)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actions", type=int, default=300, help="actions in the run (15 Hz: 300 = 20 s)")
    args = parser.parse_args()
    r = measure(args.actions)
    print(f"per minute of run: {r['records_per_min']:,.0f} records, {r['decompressed_per_min'] / 2**20:.1f} MiB "
          f"decompressed, {r['decoded_per_min'] / 2**20:.2f} MiB decoded, read in {r['read_s_per_min']:.2f} s")
    print("a run of this shape reaches each cap after: " + ", ".join(
        f"{name} {hours:.1f} h" for name, hours in r["hours"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
