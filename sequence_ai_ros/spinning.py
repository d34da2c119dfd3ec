"""Nodes spun on threads of their own, and taken down in the one order that is safe.

    with Spinning() as spun:                      # a ROS context of its own
        node = spun.create_node("planner")
        spun.spin([node], threads=3)              # a MultiThreadedExecutor on a thread
        ...
    # closed: executors shut down, their spin threads and running callbacks joined, then the
    # nodes destroyed, then the context shut down

The policy node, `sim_robot`, the demo's planner, the tests' harness and the ROS benchmarks all
spin and tear down through this. The order matters: rclpy Jazzy's `Executor.shutdown()` returns
without waiting for its spin to end or for callbacks still running on a pool, and a node destroyed
under a thread still in `spin_once` aborted the process ("terminate called without an active
exception", exit -6, once in a full suite run). Each wait is bounded: a callback that never ends
is left behind rather than hanging the shutdown.
"""

from __future__ import annotations

import signal
import threading
from typing import Callable, List, Optional, Sequence, Tuple

import rclpy
from rclpy.context import Context
from rclpy.executors import Executor, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

__all__ = ["Spinning"]

EXECUTOR_SHUTDOWN_S = 2.0  # for each executor's own shutdown


class Spinning:
    """A ROS context, the nodes in it, and the executors spinning them on threads.

    `stop_on_signals`: SIGINT and SIGTERM set `stopped` (see `wait`) instead of rclpy's handler,
    which would shut the context down at once; the nodes can then still act (hold, report)
    before `close()`. Installed first thing, so a signal during start-up is not lost."""

    def __init__(self, args: Optional[Sequence[str]] = None, *, stop_on_signals: bool = False):
        self.stopped = threading.Event()
        if stop_on_signals:
            for number in (signal.SIGINT, signal.SIGTERM):
                signal.signal(number, lambda *_: self.stopped.set())
        self.context = Context()
        rclpy.init(args=list(args) if args is not None else None, context=self.context,
                   signal_handler_options=SignalHandlerOptions.NO)
        self._nodes: List[Node] = []
        self._spinners: List[Tuple[Executor, threading.Thread]] = []

    def create_node(self, name: str, **kwargs) -> Node:
        """A node in this context, destroyed by close()."""
        return self.adopt(rclpy.create_node(name, context=self.context, **kwargs))

    def adopt(self, node: Node) -> Node:
        """A node made elsewhere (in this context) that close() destroys."""
        if all(node is not known for known in self._nodes):
            self._nodes.append(node)
        return node

    def spin(self, nodes: Sequence[Node], threads: int = 1, name: str = "executor",
             on_thread_start: Optional[Callable[[], None]] = None) -> Executor:
        """Spin `nodes` on a thread named `name`: a SingleThreadedExecutor, or with `threads` > 1 a
        MultiThreadedExecutor of that many. `on_thread_start` runs on the thread first (e.g. to
        raise its priority)."""
        executor: Executor = (MultiThreadedExecutor(num_threads=threads, context=self.context) if threads > 1
                              else SingleThreadedExecutor(context=self.context))
        for node in nodes:
            executor.add_node(self.adopt(node))

        def run() -> None:
            if on_thread_start is not None:
                on_thread_start()
            executor.spin()

        thread = threading.Thread(target=run, name=name, daemon=True)
        self._spinners.append((executor, thread))
        thread.start()
        return executor

    def spinning(self, executor: Optional[Executor] = None) -> bool:
        """Whether `executor`'s thread (every thread, without one) is still spinning."""
        return all(thread.is_alive() for spun, thread in self._spinners if executor is None or spun is executor)

    def wait(self, poll_s: float = 0.5) -> None:
        """Until `stopped` is set (a signal, with stop_on_signals) or a spin thread ended."""
        while not self.stopped.wait(poll_s) and self.spinning():
            pass

    def close(self, timeout_s: float = 5.0) -> None:
        """Shut the executors down, join their threads and the callbacks still running on their
        pools (each bounded by timeout_s), destroy the nodes (newest first), shut the context down."""
        for executor, _thread in self._spinners:
            executor.shutdown(timeout_sec=EXECUTOR_SHUTDOWN_S)
        for _executor, thread in self._spinners:
            if thread is not threading.current_thread():
                thread.join(timeout_s)
        for executor, _thread in self._spinners:
            _join_callbacks(executor, timeout_s)
        self._spinners.clear()
        while self._nodes:
            self._nodes.pop().destroy_node()
        if self.context.ok():
            rclpy.shutdown(context=self.context)

    def __enter__(self) -> Spinning:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _join_callbacks(executor: Executor, timeout_s: float) -> None:
    """Let the callbacks still running on a MultiThreadedExecutor's pool (a timer's publish, a
    service) end before the nodes are destroyed under them (bounded: one that never ends is left)."""
    pool = getattr(executor, "_executor", None)  # the pool is private; rclpy never shuts it down
    if pool is not None:
        closer = threading.Thread(target=pool.shutdown, kwargs={"wait": True}, daemon=True)
        closer.start()
        closer.join(timeout_s)
