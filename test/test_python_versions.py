"""The client on the oldest Python the package promises (3.9) — and, when asked with
`SEQUENCES_TEST_PYTHONS=3.9,3.13`, on others such as the newest here: for each, a venv (cached in `.py-versions/`, gitignored) with the client installed by pip from this
tree, running the client tests that need no ROS against the local platform.

An interpreter that is not here skips with one line naming it. The first run per interpreter
installs the dependencies (a minute or so); later runs only reinstall the client when its source
changed (a few seconds), then run the tests (about 15 s each).
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".py-versions"
# make test checks the oldest promised Python; more on request (each costs ~30 s cached, ~70 s fresh)
SERIES = tuple(v.strip() for v in os.environ.get("SEQUENCES_TEST_PYTHONS", "3.9").split(",") if v.strip())
# Client tests that need no ROS: catalogue, observations, encoding, actions, one-shot calls,
# the control loop, the simulated arm, the mock tier and the 0.20.0 names.
CLIENT_TEST_NAMES = ("test_parity", "test_observation", "test_encode", "test_actions", "test_oneshot",
                     "test_run_basic", "test_sim", "test_mock")
CLIENT_TESTS = [str(path.relative_to(ROOT)) for name in CLIENT_TEST_NAMES
                for path in (ROOT / "test" / "client").rglob(f"{name}.py")]
# The openpi link on this Python, against openpi's real server (in its own 3.11 scratch venv).
CLIENT_TESTS += [f"test/openpi/{name}.py" for name in ("test_cards", "test_msgpack_numpy", "test_openpi_link")]
EXTRAS = "serve,image,openpi"
TEST_TOOLS = ["pytest>=7", "pytest-timeout", "setuptools>=77", "wheel"]


def _interpreter(series: str) -> Optional[str]:
    """The newest patch release of `series` under ~/.pyenv/versions, else python<series> on PATH."""
    found = glob.glob(os.path.expanduser(f"~/.pyenv/versions/{series}.*/bin/python{series}"))
    found.sort(key=lambda path: [int(n) for n in re.findall(r"\d+", path.split("/versions/")[1].split("/")[0])])
    return found[-1] if found else shutil.which(f"python{series}")


def _clean_env() -> dict:
    """A plain shell's environment: nothing of the ROS workspace or its Python."""
    prefixes = ("PYTHON", "AMENT", "ROS_", "COLCON", "CMAKE", "_ROS", "VIRTUAL_ENV", "SEQUENCES_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes) and k != "LD_LIBRARY_PATH"}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _source_hash() -> str:
    digest = hashlib.sha256()
    files = sorted(p for p in (ROOT / "sequence_ai").rglob("*") if p.suffix in (".py", ".c") and p.is_file())
    for path in [*files, ROOT / "pyproject.toml", ROOT / "setup.py"]:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _run(command, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, env=_clean_env(), **kwargs)


def _venv_with_client(series: str, python: str) -> Path:
    venv = CACHE / series
    bin_dir = venv / "bin"
    ready = venv / ".dependencies-installed"
    if not ready.exists() or ready.read_text().strip() != EXTRAS:
        shutil.rmtree(venv, ignore_errors=True)
        created = _run([python, "-m", "venv", venv], timeout=120)
        assert created.returncode == 0, created.stderr
        installed = _run([bin_dir / "python", "-m", "pip", "install", "--quiet", f"{ROOT}[{EXTRAS}]", *TEST_TOOLS],
                         timeout=900, cwd=CACHE)
        assert installed.returncode == 0, installed.stderr[-3000:]
        ready.write_text(EXTRAS + "\n")
        (venv / ".client-source").write_text(_source_hash())
    marker, current = venv / ".client-source", _source_hash()
    if not marker.exists() or marker.read_text() != current:
        reinstalled = _run([bin_dir / "python", "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                            "--force-reinstall", ROOT], timeout=300, cwd=CACHE)
        assert reinstalled.returncode == 0, reinstalled.stderr[-3000:]
        marker.write_text(current)
    return venv


@pytest.mark.slow
@pytest.mark.parametrize("series", SERIES)
def test_client_passes_on_python(series):
    python = _interpreter(series)
    if python is None:
        pytest.skip(f"no Python {series} here (looked in ~/.pyenv/versions/{series}.* and for python{series} on PATH)")
    assert len(CLIENT_TESTS) == len(CLIENT_TEST_NAMES) + 3, f"a client test moved or went: {CLIENT_TESTS}"
    CACHE.mkdir(exist_ok=True)
    venv = _venv_with_client(series, python)
    probe = _run([venv / "bin" / "python", "-c", "import sys, sequence_ai; print(sys.version_info[:2], sequence_ai.__file__)"],
                 cwd=CACHE, timeout=60)
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.startswith(str(tuple(int(n) for n in series.split(".")))), probe.stdout
    assert str(venv) in probe.stdout, f"the client under test must be the pip-installed one: {probe.stdout}"
    # The venv's pytest script, not `python -m pytest`: that would put this tree first on sys.path.
    done = _run([venv / "bin" / "pytest", "-q", "-p", "no:cacheprovider", "-x", *CLIENT_TESTS], cwd=ROOT, timeout=300)
    assert done.returncode == 0, f"Python {series}:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    assert re.search(r"\d+ passed", done.stdout), done.stdout[-2000:]
