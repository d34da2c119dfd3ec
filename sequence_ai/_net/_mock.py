"""The mock tier: `base_url="mock"` (or `"mock:…"`, or SEQUENCES_BASE_URL=mock) is the local
platform, started for this process.

0.20.0 answered "mock" with a built-in offline stack (docs/PROTOCOL.md §2.2). Here it is the real local
platform (`sequence_ai/platform`, the `[serve]` extra): a gateway and a TLS worker on loopback
with a fresh key, so `SEQUENCES_BASE_URL=mock python my_loop.py` runs with no key and no network.
Everything that resolves a gateway (connect, models, account, chat, decide, perception, the CLI)
shares the one platform; no key is needed, and an environment key is not sent to it.

The client never imports the platform; it runs it: `python -m sequence_ai._net._mock` is a small guard
process that starts `python -m sequence_ai.platform --json` and stops it when this process's end
of its stdin closes — at exit, and also when this process is killed. The platform in turn holds
the read end of a pipe only the guard writes to (`--stop-when-stdin-closes`), so a guard killed
too (SIGKILL, alone or with this process) still takes the platform, and with it its worker, along.
Neither sees the user's key: the platform makes a fresh one.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import IO, List, Optional

from .._errors import SequencesError
from .._extras import install_hint

__all__ = ["MockPlatform", "ServeExtraMissing", "is_mock", "key_for", "local_platform", "missing_serve_dependencies"]

SERVE_DEPENDENCIES = ("fastapi", "uvicorn", "cryptography", "PIL", "numpy")
SERVE_INSTALL = install_hint("serve")
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
_USER_KEYS = ("SEQUENCES_API_KEY", "SEQUENCES_LOCAL_KEYS")  # the real service's key; keys a platform would accept


class ServeExtraMissing(SequencesError, ImportError):
    """`mock` needs the local platform, which needs the `[serve]` extra."""


def is_mock(value: Optional[str]) -> bool:
    return isinstance(value, str) and (value == "mock" or value.startswith("mock:"))


def missing_serve_dependencies() -> List[str]:
    """The `[serve]` packages that are not installed (found without importing them)."""
    return [name for name in (*SERVE_DEPENDENCIES, "sequence_ai.platform") if not _installed(name)]


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # ValueError: a module blocked with sys.modules[name] = None
        return False


@dataclass(frozen=True)
class MockPlatform:
    """The local platform this process started for `base_url="mock"`: where it listens and its key."""

    base_url: str
    api_key: str
    admin_token: str
    worker_url: str
    pid: int  # the platform's process


_lock = threading.Lock()
_running: Optional[MockPlatform] = None
_guard: Optional[subprocess.Popen] = None
_owner_pid = 0


def key_for(base_url: Optional[str]) -> Optional[str]:
    """The key of the platform this process started, when `base_url` is where it listens."""
    running = _running
    if running is not None and base_url is not None and base_url.rstrip("/") == running.base_url and _owner_pid == os.getpid():
        return running.api_key
    return None


def local_platform() -> MockPlatform:
    """The platform for this process, started on first use."""
    global _running, _guard, _owner_pid
    with _lock:
        if _running is not None and _owner_pid == os.getpid() and _guard is not None and _guard.poll() is None:
            return _running
        missing = missing_serve_dependencies()
        if missing:
            raise ServeExtraMissing(
                f"base_url 'mock' starts the local platform, which needs the [serve] extra (missing: "
                f"{', '.join(missing)}): {SERVE_INSTALL}"
            )
        log = tempfile.TemporaryFile(prefix="sequence-ai-mock-")  # noqa: SIM115 -- read only if the start fails
        guard = subprocess.Popen([sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=log, env=_child_env(), start_new_session=True)  # no Ctrl-C of ours
        line = _first_line(guard.stdout)
        try:
            coords = json.loads(line)
            platform = MockPlatform(coords["base_url"], coords["api_key"], coords["admin_token"],
                                    coords["worker_url"] or "", int(coords["pid"]))
        except (ValueError, KeyError, TypeError):
            _stop(guard)
            log.seek(0)
            detail = log.read().decode(errors="replace").strip()[-2000:]
            log.close()
            raise SequencesError(f"base_url 'mock': the local platform did not start within {START_TIMEOUT_S:g}s"
                                 + (f":\n{detail}" if detail else "")) from None
        log.close()
        threading.Thread(target=guard.stdout.read, name="sequence-ai-mock-drain", daemon=True).start()
        if _owner_pid != os.getpid():
            atexit.register(_stop_at_exit)
        _running, _guard, _owner_pid = platform, guard, os.getpid()
        print(f"sequence-ai: 'mock' is the local platform at {platform.base_url} (stand-in policies), "
              "stopped when this process exits", file=sys.stderr, flush=True)
        return platform


def _child_env() -> dict:
    """The platform imports this same copy of the package, wherever it was imported from."""
    env = dict(os.environ)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    env.pop("SEQUENCES_BASE_URL", None)  # the platform never reads it; a child client must not recurse
    for key in _USER_KEYS:  # not the platform's: it makes a key of its own
        env.pop(key, None)
    return env


def _first_line(stream: IO[bytes]) -> str:
    box: dict = {}
    reader = threading.Thread(target=lambda: box.setdefault("line", stream.readline().decode()), daemon=True)
    reader.start()
    reader.join(START_TIMEOUT_S)
    return box.get("line", "")


def _stop(guard: subprocess.Popen) -> None:
    """Close the guard's stdin (it stops the platform and exits); kill it if it does not."""
    try:
        if guard.stdin is not None:
            guard.stdin.close()
        guard.wait(STOP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        guard.kill()
        guard.wait()


def _stop_at_exit() -> None:
    global _running, _guard
    with _lock:
        guard, _guard, _running = _guard, None, None
    if guard is not None and _owner_pid == os.getpid():
        _stop(guard)


# --- the guard process --------------------------------------------------------------------------


def _guard_main() -> int:
    """Run the platform with our stdout; stop it when stdin reaches EOF (the client is gone). The
    platform's stdin is a pipe this process holds and never writes: its end is this process's end."""
    platform = subprocess.Popen([sys.executable, "-m", "sequence_ai.platform", "--json", "--stop-when-stdin-closes"],
                                stdin=subprocess.PIPE)

    def stop_when_the_client_is_gone() -> None:
        sys.stdin.buffer.read()
        platform.terminate()  # SIGTERM: the platform closes its servers and exits

    threading.Thread(target=stop_when_the_client_is_gone, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: platform.terminate())
    try:
        platform.wait()
    finally:
        try:
            platform.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            platform.kill()
    return 0


if __name__ == "__main__":
    sys.exit(_guard_main())
