"""Client CPU per action and underruns vs injected worker latency, ours vs the public 0.20.0 client.

    .venv/bin/python bench/bench_client.py                 # both clients, latencies 0.1-0.8 s, 90 actions, with ratios
    .venv/bin/python bench/bench_client.py --ours-only     # skip the public client
    .venv/bin/python bench/bench_client.py --actions 60 --latencies 0.1,0.4

The short form of `bench_underruns.py` (which `bench/run_all.py` runs at 1000 actions): for each
latency a worker of its own, each client in a process of its own on it at the same time, a
warm-up predict(), then run() at the model's 15 Hz with a no-op robot; ours also with lookahead=2,
which can hide latency longer than a chunk. CPU time is the driver process's
`time.process_time()` (all threads) divided by actions. The public client is installed into
`.bench-venv/` by the bench the first time.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_underruns
import common


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actions", type=int, default=90, help="actions per run (15 Hz: 90 = 6 s)")
    parser.add_argument("--latencies", default="0.1,0.2,0.4,0.8", help="worker latency, seconds (±20 %%)")
    parser.add_argument("--ours-only", action="store_true", help="skip the public client")
    args = parser.parse_args(argv)
    peer = None
    if not args.ours_only:
        try:
            peer = common.peer_python()
        except Exception as exc:  # no network, no pip: still bench our own client
            print(f"public client unavailable ({exc}); benchmarking ours only", file=sys.stderr)
    rows = bench_underruns.measure(args.actions, [float(x) for x in args.latencies.split(",")], peer,
                                   log=lambda text: print(text, file=sys.stderr), lookahead2_from_s=0.0)
    bench_underruns.print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
