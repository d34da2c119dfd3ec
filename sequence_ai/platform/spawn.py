"""LocalPlatform: the local platform in a subprocess, for tests, demos and benchmarks.

    from sequence_ai.platform.spawn import LocalPlatform

    with LocalPlatform() as platform:                 # ephemeral ports, a fresh seq_test_ key
        os.environ.update(platform.env())             # SEQUENCES_BASE_URL / SEQUENCES_API_KEY
        platform.fault("busy", count=2)               # the next two /act answer 429
        platform.fault("warming", seconds=3)          # cold start: 503 warming for 3 s
        platform.fault("latency", ms=300, jitter=0.2) # every /act, until cleared
        platform.fault("rotate_secret")               # next act with the old secret gets 401
        platform.requests()                           # the /act requests the worker saw
        platform.clear_faults()

API (stable):
    LocalPlatform(*extra_args, startup_timeout_s=20.0, api_key=None)
        extra_args are CLI flags of `python -m sequence_ai.platform` (e.g. "--cold-start", "5"),
        run by this Python or $SEQUENCES_PLATFORM_PYTHON.
    .start() -> self; .stop() (SIGTERM, waits); .kill() (SIGKILL: "gateway down");
    .restart() (same gateway port and key; new worker, new certificate) -> self
    .base_url, .api_key, .admin_token, .worker_url (as at start; connect says where it is now), .pid
    .running -> bool
    .env() -> {"SEQUENCES_BASE_URL": ..., "SEQUENCES_API_KEY": ...}
    .fault(kind, **params) -> dict      POST /admin/faults; see docs/PLATFORM.md for kinds and params
    .clear_faults(kind=None) -> dict    DELETE /admin/faults
    .reset() -> dict                    POST /admin/reset (faults, logs, stats, lease, cold start)
    .requests(limit=100) -> list[dict]  GET /admin/requests
    .stats() -> dict                    GET /admin/stats  ({app: {"METHOD /path": {status: n}}})
    .arrivals("worker POST /act") -> int GET /admin/arrivals (arrived, answered or not)
    .reports() -> list[dict]            GET /admin/reports (client telemetry received)
    .worker() -> dict                   GET /admin/worker (url, fingerprint, epoch, lease ttl, down?)
    .admin(method, path, **httpx_kwargs) -> httpx.Response   any other admin call
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional

import httpx

from .keystore import ENV_KEYS

_PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLATFORM_PYTHON = "SEQUENCES_PLATFORM_PYTHON"


def platform_python() -> str:
    """The Python the platform runs in: this one, or $SEQUENCES_PLATFORM_PYTHON (one with the [serve]
    extra, so a client under test in a Python without it, such as a distribution's set pinned in a
    scratch venv, still gets a local platform)."""
    return os.environ.get(PLATFORM_PYTHON) or sys.executable


class LocalPlatform:
    def __init__(self, *extra_args: str, startup_timeout_s: float = 20.0, api_key: Optional[str] = None):
        self.extra_args = [str(a) for a in extra_args]
        self.startup_timeout_s = startup_timeout_s
        self._api_key = api_key
        self._gateway_port = 0
        self._proc: Optional[subprocess.Popen] = None
        self._log = tempfile.TemporaryFile(prefix="sequences-local-platform-")  # noqa: SIM115 -- lives as long as self
        self.base_url = self.api_key = self.admin_token = self.worker_url = ""
        self.pid = 0

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> LocalPlatform:
        if self.running:
            return self
        cmd = [platform_python(), "-m", "sequence_ai.platform", "--json", "--gateway-port", str(self._gateway_port),
               *self.extra_args]
        env = dict(os.environ)
        if self._api_key:
            # Through the environment, never argv: a command line is readable by every user (`ps`),
            # a process's environment only by its owner.
            others = [k for k in env.get(ENV_KEYS, "").split(",") if k.strip() and k.strip() != self._api_key]
            env[ENV_KEYS] = ",".join([self._api_key, *others])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PROJECT_ROOT, env.get("PYTHONPATH")) if p)
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._log, env=env, cwd=_PROJECT_ROOT)
        line = self._first_line(self._proc)
        coords = json.loads(line)
        self.base_url, self.api_key = coords["base_url"], coords["api_key"]
        self.admin_token, self.worker_url, self.pid = coords["admin_token"], coords["worker_url"], coords["pid"]
        # Keep the key and port so a restart looks like the same gateway coming back.
        self._api_key = self.api_key
        self._gateway_port = int(self.base_url.rsplit(":", 1)[1])
        return self

    def _first_line(self, proc: subprocess.Popen) -> str:
        box: Dict[str, str] = {}
        reader = threading.Thread(target=lambda: box.setdefault("line", proc.stdout.readline().decode()), daemon=True)
        reader.start()
        reader.join(self.startup_timeout_s)
        line = box.get("line", "")
        if not line.strip():
            self.kill()
            raise RuntimeError(f"the local platform did not start within {self.startup_timeout_s}s:\n{self.log_text()}")
        # Nothing else is written to stdout, but drain it anyway so the child can never block on it.
        threading.Thread(target=proc.stdout.read, daemon=True).start()
        return line

    def stop(self, timeout_s: float = 10.0) -> Optional[int]:
        """SIGTERM and wait; returns the exit code (0 on a clean stop)."""
        proc = self._proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def kill(self) -> None:
        """SIGKILL: the gateway and worker vanish mid-whatever (the "gateway down" fault)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def restart(self) -> LocalPlatform:
        """Stop (or after kill) and start again on the same gateway port with the same key."""
        self.stop()
        deadline = time.monotonic() + 5.0
        while True:
            try:
                return self.start()
            except RuntimeError:
                if time.monotonic() > deadline:  # the port may linger a moment after a kill
                    raise
                time.sleep(0.2)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def log_text(self) -> str:
        """What the platform wrote to stderr so far."""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")

    def __enter__(self) -> LocalPlatform:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        self._log.close()

    # -- coordinates -------------------------------------------------------------------------
    def env(self) -> Dict[str, str]:
        return {"SEQUENCES_BASE_URL": self.base_url, "SEQUENCES_API_KEY": self.api_key}

    # -- admin API ---------------------------------------------------------------------------
    def admin(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"X-Admin-Token": self.admin_token, **kwargs.pop("headers", {})}
        return httpx.request(method, f"{self.base_url}/admin/{path.lstrip('/')}", headers=headers, timeout=30.0,
                             **kwargs)

    def _ok(self, response: httpx.Response) -> Any:
        if response.status_code >= 400:
            raise RuntimeError(f"admin API answered {response.status_code}: {response.text}")
        return response.json()

    def fault(self, kind: str, **params: Any) -> Dict[str, Any]:
        return self._ok(self.admin("POST", "faults", json={"kind": kind, **params}))

    def clear_faults(self, kind: Optional[str] = None) -> Dict[str, Any]:
        return self._ok(self.admin("DELETE", "faults", params={"kind": kind} if kind else None))

    def reset(self) -> Dict[str, Any]:
        return self._ok(self.admin("POST", "reset"))

    def requests(self, limit: int = 100) -> List[Dict[str, Any]]:
        return self._ok(self.admin("GET", "requests", params={"limit": limit}))["requests"]

    def stats(self) -> Dict[str, Any]:
        return self._ok(self.admin("GET", "stats"))["stats"]

    def arrivals(self, app_route: str) -> int:
        """How many requests to `app_route` ("worker POST /act", "gateway POST /v1/act/connect")
        have arrived, answered or not: a test waits on it for a request to be in progress."""
        return int(self._ok(self.admin("GET", "arrivals"))["arrivals"].get(app_route, 0))

    def reports(self, limit: int = 100) -> List[Dict[str, Any]]:
        return self._ok(self.admin("GET", "reports", params={"limit": limit}))["reports"]

    def worker(self) -> Dict[str, Any]:
        return self._ok(self.admin("GET", "worker"))
