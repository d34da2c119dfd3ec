"""package.xml against what the node can import at run time: read from the source, every import of
sequence_ai_ros/ and launch/ and of each client module they reach (`import sequence_ai` reaches
every name its face loads on first use), module level or inside a function.

Each package imported from outside the repository and the standard library is one of:
- declared in package.xml under its rosdep key (`rosdep install` brings it);
- a pip install where rosdep has no key (mcap and mcap-ros2-support, with what they pull in): the
  README and the node's own startup error give the command, which installs the [record] extra's
  packages by name;
- reached only by code a robot's node never runs (the demo's tools), each with its reason.
A new import fails here until it is put in one of these."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Dict, Set

import pytest
from test_layers import imports_of, modules

from sequence_ai._extras import EXTRAS, install_hint

ROOT = Path(__file__).resolve().parents[1]

# import name -> the rosdep key that installs it
ROSDEP_KEYS = {
    "rclpy": "rclpy", "rcl_interfaces": "rcl_interfaces", "launch": "launch", "launch_ros": "launch_ros",
    "ament_index_python": "ament_index_python", "builtin_interfaces": "builtin_interfaces", "std_msgs": "std_msgs",
    "std_srvs": "std_srvs", "sensor_msgs": "sensor_msgs", "trajectory_msgs": "trajectory_msgs",
    "diagnostic_msgs": "diagnostic_msgs", "cv_bridge": "cv_bridge",
    "httpx": "python3-httpx", "httpcore": "python3-httpx",  # httpcore: what python3-httpx depends on
    "numpy": "python3-numpy", "PIL": "python3-pil", "cv2": "python3-opencv",
}
# import name -> the extra whose pip command installs it (no rosdep key: rosdistro's rosdep/python.yaml)
PIP_ONLY = {"mcap": "record", "mcap_ros2": "record", "lz4": "record", "zstandard": "record",
            "mujoco": "physics",
            # policy_url: ws://… (an openpi server): rosdep's python3-websockets was not checked to have the
            # synchronous client (websockets 11+), so the README names the pip command
            "websockets": "openpi", "msgpack": "openpi"}  # sim_robot's `physics: mujoco` (a simulated arm, never a real one's node)
NOT_ON_A_ROBOT = {
    "matplotlib": "the timeline picture (recording/timeline.py): `sequence-ai replay --plot` and the demo",
    "sequence_ai.platform": "the local platform the demo starts (tools/demo.py), the [serve] extra",
    "yaml": "the demo's parameter file for the physical arm (tools/demo.py --physics)",
}
# pip's name of each package an extra the node uses installs -> its import name
IMPORT_NAMES = {"pillow": "PIL", "numpy": "numpy", "mcap": "mcap", "mcap-ros2-support": "mcap_ros2",
                "websockets": "websockets", "msgpack": "msgpack"}
NODE_EXTRAS = ("image", "record", "openpi")


def _face() -> Set[str]:
    """The modules `sequence_ai` loads by name on first use (its _LAZY and _MODULES tables)."""
    tree = ast.parse((ROOT / "sequence_ai" / "__init__.py").read_text())
    names: Set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") in ("_LAZY", "_MODULES"):
            value = ast.literal_eval(node.value)
            names |= {f"sequence_ai{m}" for m in value.values()} if isinstance(value, dict) else {
                f"sequence_ai.{m}" for m in value}
    assert names, "sequence_ai/__init__.py no longer has its _LAZY and _MODULES tables"
    return names


def reached_imports() -> Dict[str, Set[str]]:
    """Each outside package the node can import -> the modules that import it."""
    client = modules("sequence_ai")
    start = {**modules("sequence_ai_ros"), **{f"launch.{p.stem}": p for p in (ROOT / "launch").glob("*.py")}}
    paths, face = {**start, **client}, _face()
    queue, seen, found = list(start), set(start), {}
    while queue:
        name = queue.pop()
        for target in imports_of(name, paths[name]):
            if target.startswith("sequence_ai_ros"):
                continue  # the node's own modules (all in `start`) and its generated interfaces
            if target == "sequence_ai" or target.startswith("sequence_ai."):
                for module in [target, *(face if target == "sequence_ai" else ())]:
                    if module.startswith("sequence_ai.platform"):
                        found.setdefault("sequence_ai.platform", set()).add(name)
                    elif module in client and module not in seen:
                        seen.add(module)
                        queue.append(module)
                continue
            top = target.split(".")[0]
            if top and top not in sys.stdlib_module_names:
                found.setdefault(top, set()).add(name)
    return found


def declared() -> Set[str]:
    tree = ElementTree.parse(ROOT / "package.xml")
    return {e.text.strip() for tag in ("depend", "exec_depend") for e in tree.getroot().iter(tag)}


def test_every_import_the_node_can_reach_is_installed_by_rosdep_or_named_as_a_pip_install():
    reached = reached_imports()
    unplaced = {name: sorted(where) for name, where in reached.items()
                if name not in ROSDEP_KEYS and name not in PIP_ONLY and name not in NOT_ON_A_ROBOT}
    assert unplaced == {}, f"imports the node can reach that package.xml does not account for: {unplaced}"
    missing = {ROSDEP_KEYS[name]: sorted(where) for name, where in reached.items()
               if name in ROSDEP_KEYS and ROSDEP_KEYS[name] not in declared()}
    assert missing == {}, f"rosdep keys package.xml must declare (exec_depend): {missing}"
    assert {"rclpy", "httpx", "numpy", "PIL", "cv2", "mcap", "launch_ros"} <= set(reached), "the scan lost its way"


def test_package_xml_declares_no_python_package_the_node_does_not_import():
    reached = reached_imports()
    wanted = {ROSDEP_KEYS[name] for name in reached if name in ROSDEP_KEYS}
    python_keys = {key for key in declared() if key.startswith("python3-")}
    assert python_keys - wanted == set(), "declared in package.xml but imported nowhere the node reaches"


def test_the_extras_the_node_uses_are_declared_or_their_pip_command_is_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    for extra in NODE_EXTRAS:
        for package in EXTRAS[extra]:
            name = IMPORT_NAMES[package.split(">")[0].split("[")[0]]
            if name in PIP_ONLY:
                assert install_hint(extra).split(" (")[0] in readme, f"README: the pip command of [{extra}]"
            else:
                assert ROSDEP_KEYS[name] in declared(), f"[{extra}] needs {package}: package.xml has no {ROSDEP_KEYS[name]}"


def test_what_rosdep_cannot_install_is_named_in_package_xml_too():
    text = (ROOT / "package.xml").read_text()
    assert install_hint("record").split(" (")[0] in text, "package.xml's comment: the pip command for record_dir"


def test_the_pip_only_packages_are_the_record_extra_and_what_it_pulls_in():
    pulled = {re.split(r"[ ;<>=!~\[]", r, maxsplit=1)[0] for r in importlib.metadata.requires("mcap") or ()}
    assert {name for name, extra in PIP_ONLY.items() if extra == "record" and name not in ("mcap", "mcap_ros2")} == pulled
    assert {name for name, extra in PIP_ONLY.items() if extra == "physics"} == {"mujoco"}  # sim_robot's physics
    assert {name for name, extra in PIP_ONLY.items() if extra == "openpi"} == {"websockets", "msgpack"}


def test_package_xml_is_a_manifest_colcon_and_rosdep_read():
    package = pytest.importorskip("catkin_pkg.package", reason="catkin_pkg reads package.xml for colcon and rosdep")
    manifest = package.parse_package(str(ROOT / "package.xml"))
    manifest.validate()
    assert manifest.package_format == 3 and {d.name for d in manifest.exec_depends} == declared()
