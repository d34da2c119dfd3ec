"""A slow gateway route does not delay the worker's /act: the worker runs in a process of its own.

The load is the one that once pushed /act past a second: four clients posting the largest depth
requests the gateway takes (bench/bench_gateway_isolation.py, which reports the figures).

Timed by the worker's own clock (its request log: each /act's arrival to the start of its answer),
not by round trips as this process sees them: its four loader threads JSON-encode 15 MB bodies
beside the /act client, on a machine that may be busy with other work, so those round trips carry
this process's scheduling. The round trip keeps a generous functional bound here; its figures
against the open-loop window are the bench's (a quiet machine).
"""

from __future__ import annotations

import importlib.util
import os

import psutil

from sequence_ai.platform.spawn import LocalPlatform

_BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench")


def _bench():
    import sys

    sys.path.insert(0, _BENCH)  # the bench's own imports (common, bench_worker)
    spec = importlib.util.spec_from_file_location("bench_gateway_isolation", os.path.join(_BENCH, "bench_gateway_isolation.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_act_answers_within_the_open_loop_window_while_the_gateway_is_busy():
    bench = _bench()
    with LocalPlatform() as platform:
        gateway = psutil.Process(platform.pid)
        cpu_before = sum(gateway.cpu_times()[:2])
        workers = gateway.children()
        result = bench.measure(platform, seconds=5.0, wait_for_loaders=False)
        gateway_cpu_s = sum(gateway.cpu_times()[:2]) - cpu_before
        platform.kill()  # a clean stop would wait for the depth requests still being computed
    assert len(workers) == 1, workers  # the worker runs apart from the gateway ...
    assert not psutil.wait_procs(workers, timeout=10.0)[1], "... and goes with it, SIGKILL or not"
    act_s, worker_s, in_flight = result["act_s"], result["worker_s"], result["in_flight"]
    # The load was real: depth requests in flight at every /act, the gateway working hard.
    assert len(act_s) >= 10 and min(in_flight) >= 1, in_flight
    assert gateway_cpu_s > 1.0, f"the gateway used only {gateway_cpu_s:.2f} s of CPU"
    # On one event loop this load pushed /act to 1.1-1.7 s. By the worker's clock, each inside the
    # open-loop window (the last may be answered before its record is written).
    assert len(worker_s) >= len(act_s) - 1, (len(worker_s), len(act_s))
    assert max(worker_s) < bench.WINDOW_S, f"the worker took up to {max(worker_s):.3f} s on an /act (window {bench.WINDOW_S:.3f} s)"
    assert max(act_s) < 3.0, f"an /act round trip took {max(act_s):.3f} s as this process saw it"


def test_the_worker_process_stops_with_the_gateway():
    platform = LocalPlatform().start()
    workers = psutil.Process(platform.pid).children()
    assert platform.stop() == 0
    assert len(workers) == 1 and not psutil.wait_procs(workers, timeout=10.0)[1], "the worker outlived its gateway"
