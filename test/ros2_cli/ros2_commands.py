"""The real `ros2` command line, one subprocess per command, as a user types it.

`Ros2.run(...)` runs a command to its end; `Ros2.start(...)` starts one in the background
(`ros2 launch`, `ros2 action send_goal --feedback`, `ros2 topic echo`) and reads its output as it
comes, so a test waits for what the user would see (`wait_for`) instead of sleeping. The CLI
talks to the ros2 daemon of this ROS_DOMAIN_ID (started by the first command, stopped at the
end): without it every command would first discover the graph itself, and `ros2 param` calls made
that way were seen to miss a node that had just started ("Node not found").
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from typing import Callable, Dict, List, Optional

import yaml


class Background:
    """A command running in the background; its output (stdout and stderr) collected as it comes."""

    def __init__(self, args: List[str], env: Dict[str, str], cwd: Optional[str] = None):
        self.args = args
        self._text = ""
        self._interrupted = False
        self._changed = threading.Condition()
        # A process group of its own, as a terminal gives a command: Ctrl-C reaches all of it.
        self.process = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, bufsize=1, preexec_fn=_own_group)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self._text += line
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    @property
    def text(self) -> str:
        with self._changed:
            return self._text

    def wait_for(self, predicate: Callable[[str], bool], timeout_s: float) -> bool:
        """True once predicate(output so far) holds; False after timeout_s or when the command ended without."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not predicate(self._text):
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self._reader.is_alive()):
                    return predicate(self._text)
                self._changed.wait(min(left, 0.5))
            return True

    def finish(self, timeout_s: float) -> str:
        """Wait for the command to end by itself; its whole output."""
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError(f"{' '.join(self.args[:4])} did not end in {timeout_s:g}s:\n{self.text[-3000:]}") from None
        self._reader.join(5.0)
        return self.text

    def ctrl_c(self) -> None:
        """SIGINT to the command's process group, as Ctrl-C in its terminal; once (a second one
        makes `ros2 launch` skip its nodes' clean exit)."""
        if self.process.poll() is None and not self._interrupted:
            self._interrupted = True
            os.killpg(self.process.pid, signal.SIGINT)

    def interrupt(self, timeout_s: float = 30.0) -> Optional[int]:
        """Ctrl-C, and wait for the command to end."""
        self.ctrl_c()
        try:
            return self.process.wait(timeout_s)
        finally:
            self._reader.join(5.0)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.ctrl_c()
            try:
                self.process.wait(20.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5.0)
        try:  # whatever of its group outlived the command itself (nothing, normally)
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._reader.join(5.0)


class Ros2:
    def __init__(self, executable: str, env: Dict[str, str]):
        self.executable = executable
        self.env = env
        self.started: List[Background] = []

    def run(self, *args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess:
        return subprocess.run([self.executable, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout_s, preexec_fn=_default_sigint)

    def start(self, *args: str, cwd: Optional[str] = None) -> Background:
        command = Background([self.executable, *args], self.env, cwd)
        self.started.append(command)
        return command

    def stop_all(self) -> None:
        """Ctrl-C to every command still running at once, then wait for each."""
        for command in self.started:
            command.ctrl_c()
        for command in self.started:
            command.stop()


class GoalOutput:
    """What `ros2 action send_goal --feedback` printed, parsed: feedback messages and the result."""

    def __init__(self, text: str):
        self.text = text
        self.rejected = "Goal was rejected." in text
        self.feedback = _blocks(text, "Feedback:")
        results = _blocks(text, "Result:")
        self.result: Optional[dict] = results[0] if results else None
        finished = re.search(r"Goal finished with status: (\w+)", text)
        self.status = finished.group(1) if finished else None


def latest_status(text: str, ns: str) -> str:
    """The latest status of the policy node in `ns`, in the output of `ros2 topic echo /diagnostics`."""
    statuses = [block for block in text.split("---") if f"name: '{ns}/sequence_ai_policy: policy loop'" in block]
    return statuses[-1] if statuses else ""


def status_ok(text: str, ns: str) -> bool:
    """That latest status is OK: ready, every input fresh, no e-stop."""
    return 'level: "\\0"' in latest_status(text, ns)


def _blocks(text: str, header: str) -> List[dict]:
    """Every YAML block the CLI printed under `header` (it indents only the block's first line)."""
    blocks = []
    for part in text.split(f"{header}\n")[1:]:
        lines = part.split("\n\n", 1)[0].split("\n")
        lines[0] = lines[0].strip()
        try:
            blocks.append(yaml.safe_load("\n".join(lines)))
        except yaml.YAMLError:
            continue  # a block still being written
    return blocks


def _default_sigint() -> None:
    # Started from a background job, a process inherits SIGINT ignored: `ros2 launch` would then
    # never stop on the test's Ctrl-C, nor pass it on to its nodes.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _own_group() -> None:
    os.setpgid(0, 0)
    _default_sigint()
