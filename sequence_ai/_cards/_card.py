"""A model card: the contract of a model behind a server that publishes none (an openpi server).

A card says what a catalogue row says for the Sequences platform — control rate, open-loop
horizon, action width, space and semantics, camera views, state layout, image size — plus the
wire keys the server's input transforms read: one per view, one per state part, the prompt's.
It is a JSON object; `Card.from_dict` checks every field and names the one that is wrong.

    {"name": "pi05_droid", "robot": "droid_franka", "control_hz": 15, "action_horizon": 15,
     "open_loop_horizon": 8, "action_dim": 8, "action_space": "joint_delta",
     "action_semantics": {...},
     "views": {"exterior_1": "observation/exterior_image_1_left", "wrist_left": "observation/wrist_image_left"},
     "state": {"joint_positions": {"key": "observation/joint_position", "width": 7},
               "gripper": {"key": "observation/gripper_position", "width": 1}},
     "prompt_key": "prompt", "actions_key": "actions", "image": {"size": [224, 224], "resize": "pad", "trained_on": [320, 180]}}

`image.size` is what every frame is on the wire; `image.trained_on` (optional) the frame size, or
just the aspect ratio, of the cameras the model was trained with, which a frame is checked against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from .._errors import InvalidArgument
from .._wire import Model

__all__ = ["STATE_PARTS", "Card", "CardError"]

STATE_PARTS = ("joint_positions", "gripper", "joint_velocities", "end_effector_pose")  # Proprioception's fields
RESIZE_MODES = ("pad", "stretch")
_REQUIRED = ("name", "control_hz", "action_horizon", "open_loop_horizon", "action_dim", "action_space", "views",
             "state", "prompt_key", "image")
_OPTIONAL = ("robot", "action_semantics", "actions_key", "description")


class CardError(InvalidArgument):
    """A model card that cannot be used; the message names the card and the field."""


@dataclass(frozen=True)
class Card:
    name: str
    control_hz: float
    action_horizon: int
    open_loop_horizon: int
    action_dim: int
    action_space: str
    views: Tuple[Tuple[str, str], ...]  # (view, wire key), in the card's order
    state: Tuple[Tuple[str, str, int], ...]  # (Proprioception field, wire key, width)
    prompt_key: str
    image_size: Tuple[int, int]  # (width, height) every frame has on the wire
    image_resize: str
    trained_on: Tuple[int, int]  # (width, height) of the cameras the model was trained with
    robot: str = "unknown"
    action_semantics: Optional[Mapping[str, Any]] = None
    actions_key: str = "actions"
    description: str = ""

    @classmethod
    def from_dict(cls, data: Any, where: str) -> Card:
        """The card in `data`, or CardError naming `where` (a file, or the shipped card's name) and the field."""

        def bad(field: str, why: str) -> CardError:
            return CardError(f"model card {where}: {field} {why}")

        if not isinstance(data, Mapping):
            raise CardError(f"model card {where}: not a JSON object")
        unknown = sorted(set(data) - set(_REQUIRED) - set(_OPTIONAL))
        if unknown:
            raise bad(repr(unknown[0]), f"is not a card field (known: {', '.join(_REQUIRED + _OPTIONAL)})")
        missing = [f for f in _REQUIRED if f not in data]
        if missing:
            raise bad(repr(missing[0]), "is missing")

        def text(field: str, value: Any) -> str:
            if not isinstance(value, str) or not value.strip():
                raise bad(field, f"must be a non-empty string, not {value!r}")
            return value

        def count(field: str, value: Any) -> int:
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise bad(field, f"must be a positive integer, not {value!r}")
            return value

        hz = data["control_hz"]
        if isinstance(hz, bool) or not isinstance(hz, (int, float)) or not math.isfinite(hz) or hz <= 0:
            raise bad("control_hz", f"must be a positive number of Hz, not {hz!r}")
        horizon = count("action_horizon", data["action_horizon"])
        open_loop = count("open_loop_horizon", data["open_loop_horizon"])
        if open_loop > horizon:
            raise bad("open_loop_horizon", f"({open_loop}) must not exceed action_horizon ({horizon})")
        views = data["views"]
        if not isinstance(views, Mapping) or not views:
            raise bad("views", "must map each camera view to its wire key, e.g. {\"wrist_left\": \"observation/...\"}")
        state = data["state"]
        if not isinstance(state, Mapping):
            raise bad("state", "must map each state part to {\"key\": ..., \"width\": ...}")
        parts = []
        for part, spec in state.items():
            if part not in STATE_PARTS:
                raise bad(f"state.{part}", f"is not a state part (known: {', '.join(STATE_PARTS)})")
            if not isinstance(spec, Mapping) or set(spec) != {"key", "width"}:
                raise bad(f"state.{part}", "must be {\"key\": wire key, \"width\": values}")
            parts.append((part, text(f"state.{part}.key", spec["key"]), count(f"state.{part}.width", spec["width"])))
        image = data["image"]
        if not isinstance(image, Mapping) or not {"size", "resize"} <= set(image) <= {"size", "resize", "trained_on"}:
            raise bad("image", "must be {\"size\": [width, height], \"resize\": \"pad\" or \"stretch\", "
                      "\"trained_on\": [width, height] (optional)}")
        size = image["size"]
        if not isinstance(size, (list, tuple)) or len(size) != 2:
            raise bad("image.size", f"must be [width, height], not {size!r}")
        trained = image.get("trained_on", size)
        if not isinstance(trained, (list, tuple)) or len(trained) != 2:
            raise bad("image.trained_on", f"must be [width, height], not {trained!r}")
        if image["resize"] not in RESIZE_MODES:
            raise bad("image.resize", f"must be one of {', '.join(RESIZE_MODES)}, not {image['resize']!r}")
        semantics = data.get("action_semantics")
        if semantics is not None and not isinstance(semantics, Mapping):
            raise bad("action_semantics", "must be a JSON object")
        keys = [key for _, key in views.items()] + [key for _, key, _ in parts] + [data["prompt_key"]]
        twice = sorted({k for k in keys if isinstance(k, str) and keys.count(k) > 1})
        if twice:
            raise bad("wire keys", f"name {twice[0]!r} twice")
        return cls(
            name=text("name", data["name"]), control_hz=float(hz), action_horizon=horizon,
            open_loop_horizon=open_loop, action_dim=count("action_dim", data["action_dim"]),
            action_space=text("action_space", data["action_space"]),
            views=tuple((text("views", v), text(f"views.{v}", k)) for v, k in views.items()),
            state=tuple(parts), prompt_key=text("prompt_key", data["prompt_key"]),
            image_size=(count("image.size[0]", size[0]), count("image.size[1]", size[1])),
            image_resize=image["resize"],
            trained_on=(count("image.trained_on[0]", trained[0]), count("image.trained_on[1]", trained[1])),
            robot=text("robot", data.get("robot", "unknown")),
            action_semantics=None if semantics is None else dict(semantics),
            actions_key=text("actions_key", data.get("actions_key", "actions")),
            description=str(data.get("description", "")),
        )

    def row(self, model_id: str) -> Model:
        """The card as the catalogue row the client reads (checks, resize, rate, window), named `model_id`."""
        width, height = self.image_size
        trained_width, trained_height = self.trained_on
        wire: Dict[str, Any] = {
            "id": model_id, "object": "model", "endpoint": "act", "architecture": "vla", "robot": self.robot,
            "action_dim": self.action_dim, "state_dim": sum(width for _, _, width in self.state),
            "state_layout": {part: width for part, _, width in self.state},
            "action_horizon": self.action_horizon, "control_hz": self.control_hz,
            "open_loop_horizon": self.open_loop_horizon,
            "sustains_seconds": round(self.open_loop_horizon / self.control_hz, 3),
            "camera_views": [view for view, _ in self.views], "context_frames": 1,
            "training_frame_size": [trained_width, trained_height],
            "input_aspect_ratio": round(trained_width / trained_height, 4),
            "input_resize": self.image_resize, "client_resize": {"size": [width, height], "filter": "bilinear"},
            "action_space": self.action_space, "provider": "openpi (model card)",
        }
        if self.action_semantics is not None:
            wire["action_semantics"] = dict(self.action_semantics)
        return Model.from_wire(wire)

    def declared_action(self) -> Dict[str, Any]:
        """What a Sequences connect answer declares about actions, from the card (the width and rate checks)."""
        return {"action_dim": self.action_dim, "control_frequency_hz": self.control_hz,
                "action_space": self.action_space, "robot": self.robot}
