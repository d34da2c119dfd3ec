"""The HTTP layer's modules import only downward: no cycle, no import that runs back up, and no
import hidden inside a function to dodge one (read from the source, so a new one fails here)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[3] / "sequence_ai"
# Bottom first: each module may import only modules listed before it (or outside this list).
LAYERS = ["_errors", "_net._redact", "_net._status_errors", "_net._transport", "_net._limits", "_net._tls",
          "_net._http11_answer", "_net._http11", "_net._httpx_gateway", "_net._http", "_link._admission",
          "_link._worker", "_link._telemetry", "_act._chunk"]


def _imports(module: str):
    """(imported module, inside a function?) for every relative import of `module`, named from the package."""
    tree = ast.parse((PACKAGE / f"{module.replace('.', '/')}.py").read_text())
    nested = {id(node) for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
              for node in ast.walk(fn)}
    folder = module.split(".")[:-1]
    return [(".".join([*folder[:len(folder) - (node.level - 1)], node.module]), id(node) in nested)
            for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level and node.module]


@pytest.mark.parametrize("module", LAYERS)
def test_the_module_imports_only_modules_below_it_and_only_at_the_top(module):
    below = set(LAYERS[:LAYERS.index(module)])
    for imported, in_function in _imports(module):
        assert not in_function, f"{module} imports {imported} inside a function"
        assert imported in below or imported not in LAYERS, f"{module} imports {imported}, which is not below it"
