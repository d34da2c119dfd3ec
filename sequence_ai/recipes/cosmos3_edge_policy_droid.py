"""Cosmos3 edge policy (DROID): rows are absolute joint targets for a joint-position controller.

Three cameras, stretched to 640×360 each. The rows are already positions, so there is no
conversion: binarise the gripper at 0.5 (no clip is declared) and command each row as a target.
to_joint_positions() refuses this model on purpose — offsetting targets would double-count.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Protocol

from .._act._actions import prepare
from .._wire import Model
from ._common import SensingArm, compare, live_row, observe

SHORT_ID = "cosmos3-edge-policy-droid"

ASSUMPTIONS: Dict[str, Any] = {
    "camera_views": ["exterior_1", "exterior_2", "wrist_left"],
    "state_layout": {"joint_positions": 7, "gripper": 1},
    "input_resize": "stretch",
    "action_space": "joint_absolute",
    "action_semantics.controller_interface": "joint_position",
    "action_semantics.gripper_interface": "position",
    "action_semantics.to_joint_positions": None,
    "action_semantics.gripper_binarize_threshold": 0.5,
    "action_semantics.clip": None,
}


class PositionArm(SensingArm, Protocol):
    """The robot side: three cameras, 7 joints + gripper, a joint-position command."""

    def move_to_joint_positions(self, target: List[float]) -> None: ...


def check(models: Optional[List[Model]] = None, *, base_url: Optional[str] = None) -> List[str]:
    """Differences between this recipe's assumptions and the live catalogue ([] = still valid)."""
    return compare(SHORT_ID, ASSUMPTIONS, live_row(SHORT_ID, models, base_url))


def run(policy: Any, arm: PositionArm, model: Model, instruction: str, *, chunks: int = 10) -> int:
    """Observe → predict → command the open-loop part of each chunk as targets; returns steps."""
    steps = 0
    for _ in range(chunks):
        chunk = policy.predict(observe(arm, model, instruction)).action_chunk
        for i in range(chunk.open_loop_horizon or len(chunk)):
            arm.move_to_joint_positions(prepare(chunk, model, i))  # rows are targets: command them as they are
            steps += 1
    return steps
