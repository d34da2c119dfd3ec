"""What every recipe shares: the robot's sensing side, building its observation, and comparing
the recipe's written-down assumptions with the live catalogue row."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Protocol

from .._vision._observation import observation
from .._wire import Model, Observation


class SensingArm(Protocol):
    """Cameras by view name, 7 joint positions and one gripper position."""

    def cameras(self) -> Dict[str, Any]: ...
    def joint_positions(self) -> List[float]: ...
    def gripper_position(self) -> float: ...


def observe(arm: SensingArm, model: Model, instruction: str) -> Observation:
    return observation(model, images=arm.cameras(), joints=arm.joint_positions(),
                       gripper=[arm.gripper_position()], instruction=instruction)


def compare(short_id: str, assumptions: Dict[str, Any], live: Optional[Model]) -> List[str]:
    """One line per assumption the live row contradicts; [] when the recipe still holds."""
    if live is None:
        return [f"{short_id} is not in the catalogue"]
    differences = []
    for field, expected in assumptions.items():
        if field.startswith("action_semantics."):
            actual = (live.action_semantics or {}).get(field.split(".", 1)[1])
        else:
            actual = live.raw.get(field, getattr(live, field, None))
        if isinstance(actual, tuple):
            actual = list(actual)
        if actual != expected:
            differences.append(f"{short_id}.{field}: recipe assumes {expected!r}, catalogue says {actual!r}")
    return differences


def live_row(short_id: str, models: Optional[List[Model]], base_url: Optional[str]) -> Optional[Model]:
    from .._catalogue._models import find_model
    from .._catalogue._models import models as fetch

    rows = models if models is not None else fetch("act", base_url=base_url)
    return find_model(rows, short_id)
