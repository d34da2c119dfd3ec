"""The `policy_node` executable: one PolicyNode and its companions, each spun by an executor
of its own (the node's callbacks on a pool, the inputs, the e-stop and the control clock on one
thread each: companions.py), until SIGINT or SIGTERM; then the running goal holds and reports `shutdown`, the
results go out, and the nodes come down in spinning.py's order.

    ros2 run sequence_ai_ros policy_node --ros-args --params-file config/policy.yaml
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Iterable, Optional

from rclpy.executors import Executor
from rclpy.task import Future

import sequence_ai

from .node import PolicyNode
from .parameters import ConfigError
from .spinning import Spinning

__all__ = ["deliver_results", "main"]

RESULTS_WAIT_S = 3.0  # at shutdown, for the results of goals that just ended to go out


def main(argv: Optional[list] = None) -> int:
    # Our own signal handling: on Ctrl-C / SIGTERM the running goal must still hold and report
    # while the ROS context is alive, so rclpy's handler (which shuts the context down) is off.
    argv = list(sys.argv if argv is None else argv)
    spun = Spinning(argv, stop_on_signals=True)
    # A thread woken by the control timer waits for the GIL at most this long behind one that
    # holds it (camera conversion, JSON, HTTP); Python's default is 5 ms, a large share of a
    # 2 ms jitter budget.
    sys.setswitchinterval(0.001)
    try:
        node = PolicyNode(argv, context=spun.context)
    except (ConfigError, sequence_ai.SequencesError):
        spun.close()  # the reason is logged (FATAL); a launch file can end with the node
        return 1
    # The node's callbacks on a pool, the inputs, the e-stop and the control clock on a thread each
    # (companions.py).
    executor = spun.spin([node], threads=6, name="executor")
    spun.spin([node.inputs_node], name="inputs")
    if node.estop_node is not None:
        spun.spin([node.estop_node], name="estop")
    spun.spin([node.clock_node], name="control-clock", on_thread_start=node.priority.apply)
    spun.wait()
    node.shutdown()
    if spun.spinning(executor):  # the results go out on the executor's threads
        deliver_results(getattr(node.action_server, "_result_futures", {}).values(), executor)
    node.finish_recordings()
    spun.close()
    return 0


def deliver_results(result_futures: Iterable[Future], executor: Executor, timeout_s: float = RESULTS_WAIT_S) -> bool:
    """Wait (bounded) until the results of the goals that ended have gone out; False on timeout.

    rclpy sends a result from a task that the result's future schedules on the executor when it
    is set, after the execute callback has returned, and Jazzy's Executor.shutdown() does not
    wait for outstanding work (its wait is skipped once the flag is set): shut down at once, and a
    planner's `ros2 action send_goal` could lose the result of the goal it sent. So: wait until
    each result is set, then until every task those futures scheduled has run. The executor hands
    out the newest task first, so a callback of ours added after the sending one would say nothing
    about it; the tasks themselves are looked at. (The results and the tasks live in rclpy's
    private tables, `ActionServer._result_futures` and `Executor._tasks`: nothing public tells.)"""
    deadline = time.monotonic() + timeout_s
    for future in list(result_futures):
        if not _done_by(future, deadline):
            return False
    with executor._tasks_lock:
        scheduled = [task for task, entity, _node in executor._tasks if entity is None and not task.done()]
    return all(_done_by(task, deadline) for task in scheduled)


def _done_by(future: Future, deadline: float) -> bool:
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())  # runs once the future is done (at once if it is)
    return done.wait(max(0.0, deadline - time.monotonic()))


if __name__ == "__main__":
    sys.exit(main())
