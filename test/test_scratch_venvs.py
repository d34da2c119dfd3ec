"""scripts/scratch_venv.py: a venv of its own per requirements/scratch/NAME.txt, made with the Python its
`# python: X.Y` line names, stamped with the hash of that Python and the requirement lines (so a second
call, or an edited comment, redoes nothing, and a changed requirement remakes it), and a machine without
that Python gets one line saying so. Run on a copy of the script in a folder of its own, with
requirements that install nothing (no package index)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _scratch(root: Path, name: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(root / "scripts" / "scratch_venv.py"), name], capture_output=True,
                          text=True, timeout=300, check=False)


def test_a_scratch_venv_is_made_once_per_requirements_and_a_missing_python_is_named(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "scratch_venv.py", tmp_path / "scripts" / "scratch_venv.py")
    wanted = tmp_path / "requirements" / "scratch"
    wanted.mkdir(parents=True)
    (wanted / "tiny.txt").write_text("# python: 3.11\n# nothing to install\n")
    venv = tmp_path / ".tiny-venv"

    made = _scratch(tmp_path, "tiny")
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    version = subprocess.run([str(python), "-c", "import sys; print(sys.version_info[:2], sys.prefix)"],
                             capture_output=True, text=True, check=True).stdout
    assert version.startswith("(3, 11)") and str(venv) in version
    assert "installed in" in (venv / "install.log").read_text()
    python.with_name("marker").write_text("kept")
    (wanted / "tiny.txt").write_text("# python: 3.11\n# a comment edited: nothing to redo\n")
    assert _scratch(tmp_path, "tiny").returncode == 0 and python.with_name("marker").exists()

    (wanted / "tiny.txt").write_text("# python: 2.5\n# a Python no machine here has\n")
    missing = _scratch(tmp_path, "tiny")
    assert missing.returncode == 1
    assert "no Python 2.5 on this machine (looked under ~/.pyenv/versions and on PATH)" in missing.stderr
    made_now = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import scratch_venv; "
                               "print(scratch_venv.made('tiny'))", str(tmp_path / "scripts")],
                              capture_output=True, text=True, check=True).stdout.strip()
    assert made_now == "None"  # the 3.11 venv left there is not passed off as the one now asked for


def test_a_pip_constraint_line_reaches_pip(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "scratch_venv.py", tmp_path / "scripts" / "scratch_venv.py")
    wanted = tmp_path / "requirements" / "scratch"
    wanted.mkdir(parents=True)
    (wanted / "tiny.txt").write_text("# python: 3.11\n--no-index\npip\n")  # the venv's own pip: nothing to fetch
    assert _scratch(tmp_path, "tiny").returncode == 0
    (wanted / "tiny.txt").write_text("# python: 3.11\n# pip-constraint: pip<1\n--no-index\npip\n")
    refused = _scratch(tmp_path, "tiny")  # a new stamp: made again, and pip is held to the constraint
    assert refused.returncode == 1 and "pip could not install" in refused.stderr
    assert "pip<1" in (tmp_path / ".tiny-venv" / "install.log").read_text()
