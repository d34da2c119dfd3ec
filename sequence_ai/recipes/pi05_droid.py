"""pi0.5-DROID: the checkpoint's reference loop, driven through sequence_ai.

Rows are joint *velocities* for a joint-velocity controller (DROID's RobotEnv with
action_space="joint_velocity", gripper_action_space="position"). The reference loop takes each
row, binarises the gripper at 0.5, clips to [-1, 1] and steps; it replans after
open_loop_horizon (8) of the 15 rows. A position-only controller instead uses
to_joint_positions(chunk, q_ref, model) with q_ref read once, before the request.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Protocol

from .._act._actions import prepare
from .._wire import Model
from ._common import SensingArm, compare, live_row, observe

SHORT_ID = "pi05-droid"

# What this recipe was written against; check() says which of them the live catalogue still has.
ASSUMPTIONS: Dict[str, Any] = {
    "camera_views": ["exterior_1", "wrist_left"],
    "state_layout": {"joint_positions": 7, "gripper": 1},
    "input_resize": "pad",
    "action_space": "joint_delta",
    "action_semantics.controller_interface": "joint_velocity",
    "action_semantics.gripper_interface": "position",
    "action_semantics.to_joint_positions": "offset_q_ref",
    "action_semantics.gripper_binarize_threshold": 0.5,
    "action_semantics.clip": [-1.0, 1.0],
}


class VelocityArm(SensingArm, Protocol):
    """The robot side: two cameras, 7 joints + gripper, a joint-velocity step."""

    def step(self, action: List[float]) -> None: ...


def check(models: Optional[List[Model]] = None, *, base_url: Optional[str] = None) -> List[str]:
    """Differences between this recipe's assumptions and the live catalogue ([] = still valid)."""
    return compare(SHORT_ID, ASSUMPTIONS, live_row(SHORT_ID, models, base_url))


def run(policy: Any, arm: VelocityArm, model: Model, instruction: str, *, chunks: int = 10) -> int:
    """Observe → predict → play the open-loop part of each chunk; returns the number of steps."""
    steps = 0
    for _ in range(chunks):
        chunk = policy.predict(observe(arm, model, instruction)).action_chunk
        for i in range(chunk.open_loop_horizon or len(chunk)):
            arm.step(prepare(chunk, model, i))  # velocities for the joint-velocity controller
            steps += 1
    return steps
