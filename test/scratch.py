"""The scratch venvs of scripts/scratch_venv.py (requirements/scratch/NAME.txt -> .NAME-venv/) for the
tests that need one: `scratch_python("lerobot")` is its interpreter, once it is installed.

`make test` starts every install in the background; this waits, under the install's own lock, for
the one in progress (or makes it, for a test run on its own). A machine where it cannot be made (no
Python of the series the requirements name, no package index) skips, saying why in one line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import scratch_venv

INSTALL_TIMEOUT_S = 1800.0  # lerobot's is several GB: 5 min seen on a busy machine


def scratch_python(name: str) -> str:
    made = scratch_venv.ready(name, timeout_s=INSTALL_TIMEOUT_S)
    if isinstance(made, scratch_venv.ScratchVenvError):
        pytest.skip(f"scratch venv {name}: {made}")
    return made


def scratch_env() -> Dict[str, str]:
    """A plain shell's environment (nothing of the ROS workspace), the source tree importable,
    and the Hugging Face hub never asked: everything a test loads is on this disk."""
    prefixes = ("PYTHON", "AMENT", "ROS_", "COLCON", "CMAKE", "_ROS", "VIRTUAL_ENV", "SEQUENCES_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes) and k != "LD_LIBRARY_PATH"}
    env.update(PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env
