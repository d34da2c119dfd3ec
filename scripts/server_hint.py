"""Runs `ros2 action send_goal ...` as it is, and says which ROS domain it is on when no action
server has answered within HINT_AFTER_S: a goal sent from a terminal on another domain than the
node waits forever, and `ros2` itself only says "Waiting for an action server to become
available...".

    python scripts/server_hint.py ros2 action send_goal /ns/sequence_ai_policy/act ...

Its output is passed through line by line; the exit status is the command's.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading

HINT_AFTER_S = 5.0
WAITING = "Waiting for an action server"


def hint(action: str, domain: str) -> str:
    return (f"[workspace] no action server {action} answered within {HINT_AFTER_S:g} s on ROS_DOMAIN_ID={domain}. "
            f"Is the node on another domain? Export the same ROS_DOMAIN_ID in both terminals "
            f"(`scripts/workspace.sh run ros2 action list` shows the servers this domain sees).")


def main(argv: list) -> int:
    action = argv[3] if len(argv) > 3 else "?"
    domain = os.environ.get("ROS_DOMAIN_ID", "0")
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # its lines reach us as they are printed
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, env=env, text=True, bufsize=1)
    waiting_since = threading.Event()
    moved_on = threading.Event()

    def watch() -> None:
        waiting_since.wait()
        if not moved_on.wait(HINT_AFTER_S):
            print(hint(action, domain), file=sys.stderr, flush=True)

    threading.Thread(target=watch, daemon=True).start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches ros2 from the terminal; we end with it
    for ending in (signal.SIGTERM, signal.SIGHUP):  # sent to us alone: passed on, so ros2 is never left behind
        signal.signal(ending, lambda number, _frame: child.send_signal(number))
    assert child.stdout is not None
    for line in child.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        if WAITING in line:
            waiting_since.set()
        elif waiting_since.is_set():
            moved_on.set()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
