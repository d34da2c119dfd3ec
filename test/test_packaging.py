"""`pip install .` gives a client whose only runtime dependency is httpx, with its resampler compiled,
the `[image]`, `[serve]`, `[record]`, `[replay]` and `[lerobot]` extras and its console scripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# httpx and what httpx itself pulls in; nothing else may arrive with a base install.
HTTPX_CLOSURE = {"httpx", "httpcore", "h11", "anyio", "idna", "certifi", "sniffio", "typing-extensions", "exceptiongroup"}


@pytest.mark.slow
def test_pip_install_into_clean_venv_brings_only_httpx(tmp_path):
    env_dir = tmp_path / "clean"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    environment = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "_ROS_WHEELS_BOOTSTRAP_COMPLETE"}}
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT)],
        check=True, env=environment, cwd=tmp_path, timeout=600,
    )
    listed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        check=True, env=environment, cwd=tmp_path, capture_output=True, text=True,
    )
    installed = {p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout)}
    extra = installed - HTTPX_CLOSURE - {"sequence-ai", "pip", "setuptools", "wheel"}
    assert "sequence-ai" in installed and "httpx" in installed
    assert not extra, f"base install pulled in more than httpx: {sorted(extra)}"

    probe = subprocess.run(
        [str(python), "-c", "import sequence_ai, sys; print(sequence_ai.__version__); "
         "print(sorted(m for m in sys.modules if m.split('.')[0] in {'PIL', 'numpy', 'rclpy', 'fastapi', 'mcap'}))"],
        check=True, env=environment, cwd=tmp_path, capture_output=True, text=True,
    )
    version, heavy = probe.stdout.splitlines()
    assert version == subprocess.run(
        [sys.executable, "-c", "import runpy; print(runpy.run_path('sequence_ai/_version.py')['__version__'])"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert heavy == "[]", "importing the client must not import image, ROS or server packages"
    compiled = subprocess.run(
        [str(python), "-c", "import importlib.util; print(importlib.util.find_spec('sequence_ai._vision._resample') is not None)"],
        check=True, env=environment, cwd=tmp_path, capture_output=True, text=True,
    )
    assert compiled.stdout.strip() == "True", "pip install did not build encode()'s compiled resampler"
    for script in ("sequence-ai", "seqai"):
        assert (env_dir / "bin" / script).exists(), f"console script {script} missing"
    metadata = subprocess.run(
        [str(python), "-c", "import importlib.metadata as m, json; d = m.metadata('sequence-ai'); "
         "print(json.dumps([sorted(d.get_all('Provides-Extra')), m.requires('sequence-ai'), d['Requires-Python']]))"],
        check=True, env=environment, cwd=tmp_path, capture_output=True, text=True,
    )
    extras, requires, python_versions = json.loads(metadata.stdout)
    assert extras == ["image", "lerobot", "openpi", "physics", "record", "replay", "serve"] and python_versions == ">=3.9"
    assert [r for r in requires if "extra ==" not in r] == ["httpx<1,>=0.22"]
    # A requirement on the 0.20 client is met by this one as installed: pip does not go looking for
    # (and swap it for) the different project an index holds under this name.
    kept = subprocess.run([str(python), "-m", "pip", "install", "--dry-run", "--no-index", "--disable-pip-version-check",
                           "sequence-ai>=0.20"], env=environment, cwd=tmp_path, capture_output=True, text=True)
    assert kept.returncode == 0 and "Requirement already satisfied: sequence-ai>=0.20" in kept.stdout, kept.stdout
    assert "Would install" not in kept.stdout


def test_the_build_is_declared_in_pyproject():
    """pip warns on (and will stop running) setup.py-only builds; the metadata lives in pyproject.toml."""
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["build-system"]["build-backend"] == "setuptools.build_meta"
    assert project["project"]["name"] == "sequence-ai" and project["project"]["dependencies"] == ["httpx>=0.22,<1"]
    assert not (ROOT / "setup.cfg").exists(), "one place for the metadata"
