"""The layers hold (docs/CLIENT-LOOP.md, /DESIGN): read from the source, every import counted —
module level or inside a function, except those only a type checker sees."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, Iterator, List, Set

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


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports_of(name: str, path: Path) -> Iterator[str]:
    """Absolute names of what `name` imports, anywhere in its body."""
    tree = ast.parse(path.read_text())
    is_package = path.name == "__init__.py"
    skip: Set[int] = set()
    for node in ast.walk(tree):
        if _type_checking_only(node):
            skip.update(id(child) for child in ast.walk(node))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
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
