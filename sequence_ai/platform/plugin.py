"""Loading a user's own policy: `--policy package.module:callable`.

The callable receives a PolicyInput (observation.py) and returns the action rows: a list of rows,
a numpy array, or an object with a `steps` attribute. The worker applies the same output checks
as to the stand-ins (width = action_dim, finite), answering 500 with a detail if they fail.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable


def load_policy(spec: str) -> Callable[[Any], Any]:
    """Resolve "package.module:callable"; raises ValueError saying what is wrong."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"--policy must look like package.module:callable, got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"--policy {spec}: cannot import {module_name!r}: {err}") from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise ValueError(f"--policy {spec}: {module_name!r} has no attribute {attr!r}")
    if not callable(target):
        raise ValueError(f"--policy {spec}: {attr!r} is not callable")
    return target
