"""CPU per telemetry post, on cold caches, for each client the telemetry sender may be given: the
client's own `GatewayClient` and httpx (on the client's deadline transport, as behind a proxy).

Starts the local platform in a subprocess; each client posts a full batch (64 reports) once to
warm up, then `--posts` more, each after a `--gap` s sleep (the sender posts every 5 s, so every
post meets cold caches), timing the posting thread's CPU (`time.thread_time()`). Prints the median
per client, `--rounds` times, interleaved. It decides whether telemetry keeps its own client
(docs/CLIENT-LOOP.md, "Why telemetry keeps its own client").

    .venv/bin/python bench/bench_telemetry_post.py [--posts 15] [--gap 1.0] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: F401  (puts the repository on sys.path)

from sequence_ai._link._act_request import ActTrace
from sequence_ai._link._telemetry import BATCH_MAX, FLUSH_EVERY_S, act_report
from sequence_ai._net._http import gateway_client, gateway_headers
from sequence_ai._net._http11 import GatewayClient
from sequence_ai.platform.spawn import LocalPlatform


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=15)
    parser.add_argument("--gap", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    batch = {"reports": [act_report(ActTrace(rid=f"r-{i:08x}", rtt_s=0.1), "served", total_s=0.12,
                                    perf={"handler_ms": 40.0}) for i in range(BATCH_MAX)]}
    with LocalPlatform() as platform:
        clients = {
            "GatewayClient (ours)": lambda: GatewayClient(platform.base_url, headers=gateway_headers(platform.api_key),
                                                          timeout=10.0),
            "httpx (deadline transport)": lambda: gateway_client(platform.base_url, platform.api_key, 10.0),
        }
        medians = {name: [] for name in clients}
        for round_number in range(args.rounds):
            for name, make in clients.items():
                with make() as client:
                    client.post("/v1/reports/act", json=batch)
                    costs = []
                    for _ in range(args.posts):
                        time.sleep(args.gap)
                        started = time.thread_time()
                        client.post("/v1/reports/act", json=batch)
                        costs.append(time.thread_time() - started)
                median_ms = statistics.median(costs) * 1000
                medians[name].append(median_ms)
                print(f"round {round_number}: {name:28s} {median_ms:.2f} ms CPU per post (median of {args.posts})")
    ours, theirs = (statistics.median(values) for values in medians.values())
    per_action = (theirs - ours) / (FLUSH_EVERY_S * 15.0)
    print(f"saved by our client: {theirs - ours:.2f} ms per post = {per_action:.4f} ms per action at 15 Hz "
          f"with a {FLUSH_EVERY_S:g} s flush")
    return 0


if __name__ == "__main__":
    sys.exit(main())
