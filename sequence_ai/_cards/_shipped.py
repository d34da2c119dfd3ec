"""The cards shipped with the package: openpi's published DROID checkpoints, as its DROID example
drives them (docs/OPENPI.md). Each is the JSON a user's own card would be.

The three share DROID's wire: two 224×224 views padded from 16:9 (`resize_with_pad`), 7 joint
positions and 1 gripper position, the instruction under `prompt`, 8-wide rows at 15 Hz of which
the example plays 8 before asking again. Their rows are the platform's pi05-droid semantics
(sequence_ai/platform/catalogue.py): joint velocities clipped to [-1, 1], read as displacements
from the observed joints, gripper position binarized at 0.5.
"""

from __future__ import annotations

from typing import Any, Dict

__all__ = ["SHIPPED"]

_DROID_SEMANTICS = {
    "rows": "joint_delta",
    "controller_interface": "joint_velocity",
    "gripper_interface": "position",
    "to_joint_positions": "offset_q_ref",
    "gripper_binarize_threshold": 0.5,
    "clip": [-1.0, 1.0],
}


def _droid(name: str, action_horizon: int, description: str) -> Dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "robot": "droid_franka",
        "control_hz": 15.0,
        "action_horizon": action_horizon,
        "open_loop_horizon": 8,
        "action_dim": 8,
        "action_space": "joint_delta",
        "action_semantics": dict(_DROID_SEMANTICS),
        "views": {"exterior_1": "observation/exterior_image_1_left", "wrist_left": "observation/wrist_image_left"},
        "state": {"joint_positions": {"key": "observation/joint_position", "width": 7},
                  "gripper": {"key": "observation/gripper_position", "width": 1}},
        "prompt_key": "prompt",
        "actions_key": "actions",
        "image": {"size": [224, 224], "resize": "pad", "trained_on": [320, 180]},
    }


SHIPPED: Dict[str, Dict[str, Any]] = {
    "pi05_droid": _droid("pi05_droid", 15, "openpi pi05_droid (pi0.5 fine-tuned on DROID)"),
    "pi0_fast_droid": _droid("pi0_fast_droid", 10, "openpi pi0_fast_droid (pi0-FAST fine-tuned on DROID)"),
    "pi0_droid": _droid("pi0_droid", 10, "openpi pi0_droid (pi0 fine-tuned on DROID)"),
}
