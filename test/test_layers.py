"""The layers hold (docs/CLIENT-LOOP.md "Where things live", /DESIGN): read from the source, every
import counted — module level, inside a function, or only for a type checker. And no module of the
client or the node grows past MODULE_LINES."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Set, Tuple

ROOT = Path(__file__).resolve().parents[1]


def modules(package: str) -> Dict[str, Path]:
    base = ROOT / package
    found = {}
    for path in sorted(base.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports_of(name: str, path: Path) -> Iterator[str]:
    """Absolute names of what `name` imports, anywhere in its body."""
    tree = ast.parse(path.read_text())
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            yield stem
            yield from (f"{stem}.{alias.name}" for alias in node.names)


def graph(package: str) -> Dict[str, Set[str]]:
    mods = modules(package)
    return {name: {target for target in imports_of(name, path) if target in mods and target != name}
            for name, path in mods.items()}


def cycles(edges: Dict[str, Set[str]]) -> List[List[str]]:
    found, state, stack = [], {}, []

    def visit(node: str) -> None:
        state[node] = "open"
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == "open":
                found.append([*stack[stack.index(target):], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node)
    return found


def _client_modules() -> Dict[str, Path]:
    return {n: p for n, p in modules("sequence_ai").items() if not n.startswith("sequence_ai.platform")}


def test_no_import_cycle_in_the_client_or_the_platform():
    edges = graph("sequence_ai")
    # a package's __init__ re-exporting its modules is not a cycle through them
    edges = {n: {t for t in targets if not n.startswith(t + ".")} for n, targets in edges.items()}
    edges = {n: {t for t in targets if t not in ("sequence_ai", "sequence_ai.platform")} for n, targets in edges.items()}
    assert cycles(edges) == []


def test_the_platform_never_imports_the_client():
    for name, path in modules("sequence_ai").items():
        if not name.startswith("sequence_ai.platform"):
            continue
        client = [t for t in imports_of(name, path) if t.startswith("sequence_ai") and
                  not t.startswith("sequence_ai.platform") and t != "sequence_ai"]
        assert client == [], f"{name} imports the client: {client}"


def test_the_client_has_no_ros_import_and_never_imports_the_platform_at_import_time():
    for name, path in _client_modules().items():
        tree = ast.parse(path.read_text())
        for target in imports_of(name, path):
            assert not target.startswith(("rclpy", "sequence_ai_ros", "rosidl")), f"{name} imports {target}"
        top = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        for node in top:
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            assert not any(n and ".platform" in f".{n}" for n in names), f"{name} imports the platform at import time"


def test_the_node_uses_only_the_public_client():
    for name, path in modules("sequence_ai_ros").items():
        private = [t for t in imports_of(name, path) if t.startswith("sequence_ai.") and
                   t.split(".")[1].startswith("_")]
        assert private == [], f"{name} imports private client modules: {private}"


# The client's floors, lowest first: a module imports only from its own wing and the floors below.
# The root base and the face are floors of several root modules; the wings between them are the
# private subpackages, in the order they use each other.
ROOT_BASE = ("_errors", "_extras", "_version", "_wire", "_waiting", "_console", "_warming")
WINGS = ("_net", "_cards", "_link", "_catalogue", "_vision", "_act", "_loop")
ABOVE_THE_WINGS = ("_oneshot", "recording")  # use the wings; below the face; not each other


def wing_of(name: str) -> str:
    """`sequence_ai._loop._refill` -> `_loop`; a root module is its own wing; the package is the face's."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def floor_of(wing: str) -> int:
    if wing in ROOT_BASE:
        return 0
    if wing in WINGS:
        return 1 + WINGS.index(wing)
    if wing in ABOVE_THE_WINGS:
        return 1 + len(WINGS)
    return 2 + len(WINGS)  # the face: _policy, _doctor, cli, act, types, errors, sim, recipes, ...


def upward(edges: Iterable[Tuple[str, str]]) -> List[str]:
    """The imports that break the order: into a higher floor, or across two wings of one floor
    (the root base and the face are one wing each)."""
    broken = []
    for source, target in edges:
        a, b = wing_of(source), wing_of(target)
        fa, fb = floor_of(a), floor_of(b)
        same_floor_ok = a == b or fa in (0, floor_of("__init__"))
        if fb > fa or (fb == fa and not same_floor_ok):
            broken.append(f"{source} -> {target}")
    if any(wing_of(s) == "_vision" and wing_of(t) == "_net" for s, t in edges):
        broken.append("_vision imports _net: frames and observations never touch the network")
    return broken


def _client_edges() -> List[Tuple[str, str]]:
    mods = _client_modules()
    return [(name, target) for name, path in mods.items() for target in imports_of(name, path)
            if target in mods and target != name]


def test_every_client_module_is_on_a_floor():
    wings = {wing_of(name) for name in _client_modules()}
    placed = set(ROOT_BASE) | set(WINGS) | set(ABOVE_THE_WINGS)
    private_roots = {w for w in wings - placed if w.startswith("_") and w not in ("__init__", "__main__")}
    # a new private root module or wing must be given its floor here, not fall into the face
    assert private_roots <= {"_policy", "_doctor", "_doctor_openpi"}, sorted(private_roots)


def test_the_wings_import_only_downward():
    assert upward(_client_edges()) == []


def test_the_order_check_catches_an_upward_import():
    assert upward([("sequence_ai._net._http", "sequence_ai._loop._refill")]) == [
        "sequence_ai._net._http -> sequence_ai._loop._refill"]
    assert upward([("sequence_ai._loop._prefetch", "sequence_ai._loop._control_loop")]) == []
    assert upward([("sequence_ai._vision._encode", "sequence_ai._net._limits")]) != []
    assert upward([("sequence_ai.recording.run", "sequence_ai._oneshot._calls")]) != []
    assert upward([("sequence_ai._waiting", "sequence_ai._link._fetch")]) != []
    assert upward([("sequence_ai._policy", "sequence_ai._loop._refill"), ("sequence_ai.act", "sequence_ai._policy")]) == []


# The node's floors (docs/ROS.md "Where things live"), lowest first: a module imports only from its own
# wing and the floors below. tools/ (demo, simulated arm, launcher) sits on top and nothing else imports it.
NODE_BASE = ("parameters", "qos", "spinning")
NODE_FLOORS = (NODE_BASE, ("inputs", "estop"), ("control", "goal"),
               ("__init__", "node", "policy_node", "companions", "diagnostics", "warmup", "executables"), ("tools",))


def node_wing_of(name: str) -> str:
    """`sequence_ai_ros.goal.slot` -> `goal`; `sequence_ai_ros.node` -> `node`; the package -> `__init__`."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def node_floor_of(wing: str) -> int:
    for floor, wings in enumerate(NODE_FLOORS):
        if wing in wings:
            return floor
    raise AssertionError(f"sequence_ai_ros.{wing} is on no floor: give it one in NODE_FLOORS")


def node_upward(edges: Iterable[Tuple[str, str]]) -> List[str]:
    """The node's imports that break the order: into a higher floor, or across two wings of one floor
    (the base and the face, root modules each, may import each other's floor mates)."""
    broken = []
    for source, target in edges:
        a, b = node_wing_of(source), node_wing_of(target)
        fa, fb = node_floor_of(a), node_floor_of(b)
        same_floor_ok = a == b or fa in (0, node_floor_of("node"))
        if fb > fa or (fb == fa and not same_floor_ok):
            broken.append(f"{source} -> {target}")
    return broken


def _node_edges() -> List[Tuple[str, str]]:
    edges = graph("sequence_ai_ros")
    return [(name, target) for name, targets in edges.items() for target in targets
            if not name.startswith(target + ".") and target != "sequence_ai_ros"]


def test_every_node_module_is_on_a_floor():
    for name in modules("sequence_ai_ros"):
        node_floor_of(node_wing_of(name))


def test_no_import_cycle_in_the_node():
    edges: Dict[str, Set[str]] = {}
    for source, target in _node_edges():
        edges.setdefault(source, set()).add(target)
    assert cycles(edges) == []


def test_the_node_wings_import_only_downward():
    assert node_upward(_node_edges()) == []


def test_no_product_module_imports_the_tools():
    importers = [f"{s} -> {t}" for s, t in _node_edges() if node_wing_of(t) == "tools" and node_wing_of(s) != "tools"]
    assert importers == []


def test_the_node_order_check_catches_an_upward_import():
    assert node_upward([("sequence_ai_ros.goal.acceptance", "sequence_ai_ros.warmup")]) == [
        "sequence_ai_ros.goal.acceptance -> sequence_ai_ros.warmup"]
    assert node_upward([("sequence_ai_ros.goal.acceptance", "sequence_ai_ros.estop.topic")]) == []  # a lower floor
    assert node_upward([("sequence_ai_ros.goal.outcome", "sequence_ai_ros.control.arm")]) != []  # across one floor
    assert node_upward([("sequence_ai_ros.inputs.samples", "sequence_ai_ros.tools.demo")]) != []
    assert node_upward([("sequence_ai_ros.control.arm", "sequence_ai_ros.inputs.samples"),
                        ("sequence_ai_ros.node", "sequence_ai_ros.diagnostics"),
                        ("sequence_ai_ros.tools.demo", "sequence_ai_ros.spinning")]) == []


# "No module is over ~350 lines" (#25), the client's and the node's.
MODULE_LINES = 350


def over_the_limit(mods: Dict[str, Path], limit: int = MODULE_LINES) -> Dict[str, int]:
    """The modules longer than `limit` lines, with their lengths."""
    return {name: n for name, path in mods.items() if (n := len(path.read_text().splitlines())) > limit}


def test_no_client_module_is_much_over_350_lines():
    long = over_the_limit(_client_modules())
    assert long == {}, long


def test_no_node_module_is_over_350_lines():
    long = over_the_limit(modules("sequence_ai_ros"))
    assert long == {}, long


def test_the_size_check_catches_a_module_grown_over_the_limit(tmp_path):
    at, over = tmp_path / "at.py", tmp_path / "over.py"
    at.write_text("pass\n" * MODULE_LINES)
    over.write_text("pass\n" * (MODULE_LINES + 1))
    assert over_the_limit({"at": at, "over": over}) == {"over": MODULE_LINES + 1}
