"""openpi's real `WebsocketPolicyServer` (the openpi-server package, in its scratch venv) serving the
stand-in policy (sequence_ai/platform/openpi_standin.py), as a process a test starts, kills and restarts."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "test"))
from eventually import wait_until
from scratch import scratch_env, scratch_python

sys.path.pop(0)

START_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


class OpenpiServer:
    def __init__(self, *args: str, port: Optional[int] = None):
        self.python = scratch_python("openpi")
        self.args: List[str] = list(args)
        self.port = port or free_port()
        self.url = f"ws://127.0.0.1:{self.port}"
        self.process: Optional[subprocess.Popen] = None

    def start(self, wait: bool = True) -> OpenpiServer:
        command = [self.python, "-m", "sequence_ai.platform.openpi_standin", "--port", str(self.port), *self.args]
        self.process = subprocess.Popen(command, env=scratch_env(), cwd=str(ROOT), stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, start_new_session=True)
        if wait and wait_until(lambda: accepts(self.port) or self.process.poll() is not None, START_TIMEOUT_S) is None:
            raise RuntimeError(f"the openpi server did not start listening on {self.port}")
        if self.process.poll() is not None:
            raise RuntimeError(f"the openpi server exited: {self.process.stderr.read().decode()[-2000:]}")
        return self

    def kill(self) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
        if process is not None and process.stderr is not None:
            process.stderr.close()

    def __enter__(self) -> OpenpiServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()
