"""One worked loop per model whose action semantics have been verified.

    recipe = sequence_ai.recipes.for_model(model)   # None for any other model
    assert not recipe.check(), recipe.check()        # assumptions still match the live catalogue
    recipe.run(policy, arm, model, "pick up the cup")

Each module states what it assumes (`ASSUMPTIONS`), checks it against the catalogue
(`check()`), and runs the checkpoint's own reference loop (`run()`).
"""

from __future__ import annotations

from types import ModuleType
from typing import Optional, Union

from .._wire import Model
from . import cosmos3_edge_policy_droid, pi05_droid

__all__ = ["cosmos3_edge_policy_droid", "for_model", "pi05_droid"]

_BY_SHORT_ID = {module.SHORT_ID: module for module in (pi05_droid, cosmos3_edge_policy_droid)}


def for_model(model: Union[Model, str]) -> Optional[ModuleType]:
    """The recipe module for `model` (a Model, or a short or full id), or None."""
    name = model.short_id if isinstance(model, Model) else str(model).rstrip("/").rsplit("/", 1)[-1]
    return _BY_SHORT_ID.get(name)
