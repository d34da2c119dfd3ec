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


def readme_launch_arguments() -> dict:
    """{launch file: the argument names the README lists for it}, from its lines
    "`ros2 launch sequence_ai_ros FILE --show-args` lists the launch arguments: `a`, `b`."."""
    import re

    text = " ".join((ROOT / "README.md").read_text().split())
    found = re.findall(r"`ros2 launch sequence_ai_ros (\S+\.launch\.py) --show-args` lists the launch arguments: "
                       r"((?:`\w+`(?:, )?)+)\.", text)
    return {name: re.findall(r"`(\w+)`", listed) for name, listed in found}


def declared_arguments(launch: Path) -> list:
    tree = ast.parse(launch.read_text())
    return [node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "id", "") == "DeclareLaunchArgument"]


def test_the_readme_lists_every_argument_each_launch_file_declares():
    listed = readme_launch_arguments()
    assert set(listed) == {p.name for p in (ROOT / "launch").glob("*.launch.py")}, listed
    for name, arguments in listed.items():
        assert len(arguments) == len(set(arguments)), (name, arguments)
        declared = declared_arguments(ROOT / "launch" / name)
        assert set(declared) <= set(arguments), f"{name} declares {set(declared) - set(arguments)}, not in the README"
    # what demo.launch.py shows beyond its own comes from the policy launch it includes
    assert set(listed["demo.launch.py"]) <= set(listed["policy.launch.py"]) | set(
        declared_arguments(ROOT / "launch" / "demo.launch.py"))
