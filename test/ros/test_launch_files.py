"""The launch files name executables that are installed and config files that exist."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.ros
ROOT = Path(__file__).resolve().parents[2]


def test_launch_files_name_executables_and_files_that_exist():
    installed = {p.name for p in (ROOT / "scripts" / "bin").iterdir()}
    cmake = (ROOT / "CMakeLists.txt").read_text()
    for launch in (ROOT / "launch").glob("*.launch.py"):
        tree = ast.parse(launch.read_text())
        executables = [kw.value.value for node in ast.walk(tree) if isinstance(node, ast.Call)
                       for kw in node.keywords if kw.arg == "executable"]
        assert executables, launch.name
        assert set(executables) <= installed, f"{launch.name} runs {executables}"
        for executable in executables:
            assert f"scripts/bin/{executable}" in cmake, f"{executable} is not installed by CMakeLists.txt"
        configs = [c.value for c in ast.walk(tree) if isinstance(c, ast.Constant) and str(c.value).endswith(".yaml")]
        assert all((ROOT / "config" / c).exists() for c in configs), configs
