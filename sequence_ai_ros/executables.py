"""How the package's two executables start (scripts/bin/*, `python -m sequence_ai_ros.executables NAME`).

Ctrl-C, or a launch ending because another of its processes ended, can reach a process while it
is still importing numpy and rclpy or building its node. Python would then die of a
KeyboardInterrupt traceback with status -2, which `ros2 launch` reports as "process has died".
So a SIGINT handler that exits quietly with status 0 goes in before any heavy import; each
executable's own handling (rclpy's, or policy_node's) takes over once it is up.

While the executable's modules are imported, SIGINT is held back (blocked) and lands once they
are in: an exception raised by a handler inside an import can be turned into another by compiled
code on the way out (numpy's core, interrupted while it imports `datetime` from C, reports an
ImportError, and the process dies of that traceback with status 1 — seen in a CI run).
"""

from __future__ import annotations

import importlib
import signal
import sys
from typing import NoReturn

__all__ = ["EXECUTABLES", "run"]

EXECUTABLES = {"policy_node": "sequence_ai_ros.policy_node", "sim_robot": "sequence_ai_ros.tools.sim_robot"}


def _quiet_exit(*_: object) -> NoReturn:
    raise SystemExit(0)


def run(executable: str) -> int:
    signal.signal(signal.SIGINT, _quiet_exit)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        module = importlib.import_module(EXECUTABLES[executable])
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a Ctrl-C held back lands here: exit 0
    return int(module.main() or 0)


if __name__ == "__main__":
    name = sys.argv.pop(1)  # the node's own arguments follow, as ros2 run passes them
    sys.exit(run(name))
