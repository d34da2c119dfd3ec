"""The scratch venvs of scripts/workspace.sh (requirements/scratch/NAME.txt) for the tests that need
one: `scratch_python("lerobot")` is its interpreter, once it is installed.

`make test` starts each install in the background; this runs `scripts/workspace.sh scratch NAME`,
which returns at once when the venv is ready and otherwise waits, under the install's own lock,
for the one in progress (or makes it, for a test run on its own). A machine without the venv's
Python skips, saying so in one line; a failed install fails, with the end of its log.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Dict

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL_TIMEOUT_S = 1800.0  # lerobot's is several GB: 5 min seen on a busy machine


def scratch_python(name: str) -> str:
    folder = ROOT / ".scratch" / name
    subprocess.run([str(ROOT / "scripts" / "workspace.sh"), "scratch", name], capture_output=True, text=True,
                   timeout=INSTALL_TIMEOUT_S, check=False)
    if (folder / ".missing").is_file():
        pytest.skip(f"scratch venv {name}: {(folder / '.missing').read_text().strip()}")
    if not (folder / ".ready").is_file():
        log = folder / "install.log"
        tail = log.read_text(errors="replace")[-3000:] if log.is_file() else "(no log)"
        pytest.fail(f"scratch venv {name} could not be installed; the end of {log}:\n{tail}")
    return str(folder / "bin" / "python")


def scratch_env() -> Dict[str, str]:
    """A plain shell's environment (nothing of the ROS workspace), the source tree importable,
    and the Hugging Face hub never asked: everything a test loads is on this disk."""
    prefixes = ("PYTHON", "AMENT", "ROS_", "COLCON", "CMAKE", "_ROS", "VIRTUAL_ENV", "SEQUENCES_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes) and k != "LD_LIBRARY_PATH"}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env
