"""Starting the package's nodes as processes: one node (`NodeProcess`), or a launch file through
the real `ros2 launch` (`LaunchProcess`).

The demo starts its processes with `ros2 launch` where the ros2 command-line tools are installed
(`ros2_cli()`), and with `NodeProcess` otherwise (a clone without the tools' wheels: the ROS
wheels on the package index carry no launch). The tests and benchmarks use `NodeProcess` on
purpose: one process per node with its own parameters and log, stopped on its own, starts in a
fraction of the time a launch does. Both stop their process with SIGINT, on which the policy
node holds and reports `shutdown`; both run it in the loopback-only DDS environment.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

__all__ = ["LaunchProcess", "NodeProcess", "config_path", "ros2_cli", "ros_environment"]

from ..executables import EXECUTABLES


def config_path(name: str) -> Path:
    """A file of the package's config/ directory (installed share/ first, else the source tree)."""
    try:
        from ament_index_python.packages import get_package_share_directory

        candidate = Path(get_package_share_directory("sequence_ai_ros")) / "config" / name
        if candidate.exists():
            return candidate
    except Exception:
        pass
    return Path(__file__).resolve().parents[1] / "config" / name


def ros2_cli() -> Optional[str]:
    """The `ros2` command, when it is installed (the workspace's wheels or a system ROS), else None."""
    return shutil.which("ros2")


def ros_environment(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """This process's environment with DDS kept on loopback and room for raw frames in shared
    memory (and any extra variables)."""
    env = dict(os.environ)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env.setdefault("ROS_DOMAIN_ID", "42")
    env.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")
    # A shared-memory segment that holds more than one raw camera frame (config/fastdds_shm.xml).
    env.setdefault("FASTRTPS_DEFAULT_PROFILES_FILE", str(config_path("fastdds_shm.xml")))
    env["PYTHONUNBUFFERED"] = "1"
    if extra:
        env.update(extra)
    return env


def _default_sigint() -> None:
    # A process started in the background of a non-interactive shell inherits SIGINT ignored;
    # `ros2 launch` would then never pass it on to the nodes.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class _Process:
    """A process with its output in a log file (or discarded), stopped with SIGINT on exit."""

    def __init__(self, args: List[str], env: Optional[Dict[str, str]], log_path: Union[str, Path, None]):
        self.args = args
        self.log_path = Path(log_path) if log_path else None  # output() reads it back
        self._log = open(log_path, "wb") if log_path else subprocess.DEVNULL  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(args, env=ros_environment(env), stdout=self._log, stderr=subprocess.STDOUT,
                                        preexec_fn=_default_sigint)

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout_s: float = 10.0) -> Optional[int]:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        if self._log is not subprocess.DEVNULL:
            self._log.close()
        return self.process.returncode

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path and self.log_path.exists() else ""

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class NodeProcess(_Process):
    """One node of the package in its own process."""

    def __init__(self, executable: str, *, params_files: Sequence[Path] = (), namespace: str = "",
                 parameters: Optional[Dict[str, object]] = None, env: Optional[Dict[str, str]] = None,
                 log_path: Union[str, Path, None] = None):
        if executable not in EXECUTABLES:
            raise ValueError(f"unknown executable {executable!r}; expected one of {', '.join(EXECUTABLES)}")
        args: List[str] = [sys.executable, "-P", "-m", "sequence_ai_ros.executables", executable, "--ros-args"]
        for path in params_files:
            args += ["--params-file", str(path)]
        for name, value in (parameters or {}).items():
            args += ["-p", f"{name}:={_ros_value(value)}"]
        if namespace:
            args += ["-r", f"__ns:={namespace}"]
        super().__init__(args, env, log_path)


class LaunchProcess(_Process):
    """`ros2 launch sequence_ai_ros <launch_file> name:=value ...`; SIGINT reaches every node."""

    def __init__(self, launch_file: str, arguments: Optional[Dict[str, object]] = None, *,
                 env: Optional[Dict[str, str]] = None, log_path: Union[str, Path, None] = None):
        ros2 = ros2_cli()
        if ros2 is None:
            raise FileNotFoundError("no ros2 command on PATH (make setup installs it from ../shared/ros2-cli-wheels)")
        args = [ros2, "launch", "sequence_ai_ros", launch_file]
        args += [f"{name}:={value if isinstance(value, str) else _ros_value(value)}"
                 for name, value in (arguments or {}).items()]
        super().__init__(args, env, log_path)

    def stop(self, timeout_s: float = 20.0) -> Optional[int]:  # launch stops its nodes first
        return super().stop(timeout_s)


def _ros_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_ros_value(v) for v in value) + "]"
    if isinstance(value, str):
        return value if value else "''"
    return repr(value)
