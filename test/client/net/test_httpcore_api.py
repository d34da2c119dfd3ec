"""The httpcore the gateway transport can build on: 0.14 and later (test/test_distribution_sets.py
runs the client on 0.14.5, 1.0.0 and the newest); anything older is an ImportError naming the floor,
never a failure at the first request. An older httpcore is stood for by a package of that name
holding only its version, put first on the path of a Python of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_an_httpcore_before_0_14_is_an_import_error_naming_the_floor(tmp_path):
    (tmp_path / "httpcore").mkdir()
    (tmp_path / "httpcore" / "__init__.py").write_text("__version__ = '0.13.7'\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(tmp_path), str(ROOT)))}
    done = subprocess.run([sys.executable, "-c", "import sequence_ai._net._httpcore_api"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=60)
    assert done.returncode == 1
    assert ("ImportError: the client needs httpx 0.22 or newer, with httpcore 0.14 or newer; this Python has "
            "httpcore 0.13.7") in done.stderr, done.stderr


def test_this_httpcore_gives_the_backend_the_gateway_builds_on():
    from sequence_ai._net._httpcore_api import NetworkBackend, NetworkStream, SyncBackend, connect_options

    assert issubclass(SyncBackend, NetworkBackend) and NetworkStream.__name__ == "NetworkStream"
    assert connect_options(None) == {} and connect_options([(1, 2, 3)]) == {"socket_options": [(1, 2, 3)]}
