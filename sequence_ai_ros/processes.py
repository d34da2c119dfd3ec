"""Starting the package's nodes as processes, the way `ros2 launch` would.

launch_ros has no wheel on the development machines, so the demo, the tests and the benchmarks
start `policy_node` and `sim_robot` with this instead: the same executables' modules, a params
file, a namespace, and the loopback-only DDS environment.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

__all__ = ["NodeProcess", "config_path", "ros_environment"]

MODULES = {"policy_node": "sequence_ai_ros.policy_node", "sim_robot": "sequence_ai_ros.sim_robot"}


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


class NodeProcess:
    """One node in its own process; stopped with SIGINT (it holds and reports) on exit."""

    def __init__(self, executable: str, *, params_files: Sequence[Path] = (), namespace: str = "",
                 parameters: Optional[Dict[str, object]] = None, env: Optional[Dict[str, str]] = None,
                 log_path: Union[str, Path, None] = None):
        if executable not in MODULES:
            raise ValueError(f"unknown executable {executable!r}; expected one of {', '.join(MODULES)}")
        args: List[str] = [sys.executable, "-P", "-m", MODULES[executable], "--ros-args"]
        for path in params_files:
            args += ["--params-file", str(path)]
        for name, value in (parameters or {}).items():
            args += ["-p", f"{name}:={_ros_value(value)}"]
        if namespace:
            args += ["-r", f"__ns:={namespace}"]
        self.args = args
        self.log_path = Path(log_path) if log_path else None  # output() reads it back
        self._log = open(log_path, "wb") if log_path else subprocess.DEVNULL  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(args, env=ros_environment(env), stdout=self._log, stderr=subprocess.STDOUT)

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

    def __enter__(self) -> NodeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _ros_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_ros_value(v) for v in value) + "]"
    if isinstance(value, str):
        return value if value else "''"
    return repr(value)
