"""How the package's two executables start (scripts/bin/*, `python -m sequence_ai_ros.executables NAME`).

Ctrl-C, or a launch ending because another of its processes ended, can reach a process while it
is still importing numpy and rclpy or building its node. Python would then die of a
KeyboardInterrupt traceback with status -2, which `ros2 launch` reports as "process has died".
So a SIGINT handler that exits quietly with status 0 goes in before any heavy import; each
executable's own handling (rclpy's, or policy_node's) takes over once it is up.
"""

from __future__ import annotations

import importlib
import signal
import sys
from typing import NoReturn

__all__ = ["EXECUTABLES", "run"]

EXECUTABLES = {"policy_node": "sequence_ai_ros.policy_node", "sim_robot": "sequence_ai_ros.sim_robot"}


def _quiet_exit(*_: object) -> NoReturn:
    raise SystemExit(0)


def run(executable: str) -> int:
    signal.signal(signal.SIGINT, _quiet_exit)
    return int(importlib.import_module(EXECUTABLES[executable]).main() or 0)


if __name__ == "__main__":
    name = sys.argv.pop(1)  # the node's own arguments follow, as ros2 run passes them
    sys.exit(run(name))
