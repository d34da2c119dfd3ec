"""`scripts/workspace.sh scratch NAME`: a venv of its own from requirements/scratch/NAME.txt with the
Python its first line names, marked ready with the hash of its Python and requirement lines (so a
second call, or an edited comment, redoes nothing, and a changed requirement reinstalls), and a machine without that Python gets one line saying so. Run on a
copy of the script in a folder of its own, with an empty requirements file (no package index)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _scratch(root: Path, name: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(root / "scripts" / "workspace.sh"), "scratch", name], capture_output=True, text=True,
                          timeout=300, check=False)


def test_a_scratch_venv_is_made_once_per_requirements_and_a_missing_python_is_named(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "workspace.sh", tmp_path / "scripts" / "workspace.sh")
    wanted = tmp_path / "requirements" / "scratch"
    wanted.mkdir(parents=True)
    (wanted / "tiny.txt").write_text("# python: 3.11\n# nothing to install\n")
    venv = tmp_path / ".scratch" / "tiny"

    assert _scratch(tmp_path, "tiny").returncode == 0
    python = venv / "bin" / "python"
    version = subprocess.run([str(python), "-c", "import sys; print(sys.version_info[:2], sys.prefix)"],
                             capture_output=True, text=True, check=True).stdout
    assert version.startswith("(3, 11)") and str(venv) in version
    assert "installed in" in (venv / "install.log").read_text()
    ready = (venv / ".ready").read_text()
    python.with_name("marker").write_text("kept")
    (wanted / "tiny.txt").write_text("# python: 3.11\n# a comment edited: nothing to redo\n")
    assert _scratch(tmp_path, "tiny").returncode == 0 and python.with_name("marker").exists()

    (wanted / "tiny.txt").write_text("# python: 2.5\n# a Python no machine here has\n")
    assert _scratch(tmp_path, "tiny").returncode == 0
    assert not (venv / ".ready").exists() and ready
    assert (venv / ".missing").read_text().strip() == (
        "no Python 2.5 on this machine (looked under ~/.pyenv/versions and on PATH)")
