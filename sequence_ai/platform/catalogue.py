"""The local catalogue: one row per model, with every field of docs/PROTOCOL.md §4.2 and the extras the
client reads from `raw` (open_loop_horizon, sustains_seconds, action_semantics, pass_raw).

Where public facts conflict (docs/PROTOCOL.md §12) the choices are written down, with why, in
docs/PLATFORM.md. Rows are plain dicts because they go out on the wire verbatim.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional, Tuple

PREFIX = "accounts/sequences/models/"

_DROID_LAYOUT = {"joint_positions": 7, "gripper": 1}

# Rows whose values are targets rather than displacements share one semantics block.
_ABSOLUTE_SEMANTICS = {
    "rows": "joint_absolute",
    "controller_interface": "joint_position",
    "gripper_interface": "position",
    "to_joint_positions": None,
    "gripper_binarize_threshold": 0.5,
    "clip": None,
}


def _act_row(short: str, **fields: Any) -> Dict[str, Any]:
    row: Dict[str, Any] = {
        "id": PREFIX + short,
        "object": "model",
        "endpoint": "act",
        "architecture": "vla",
        "robot": "droid_franka",
        "action_dim": 8,
        "state_dim": 8,
        "state_layout": dict(_DROID_LAYOUT),
        "control_hz": 15.0,
        "context_frames": 1,
        "pass_raw": True,
        "provider": "local stand-in",
        "pricing": {"per_action_chunk_usd": 0.0},
    }
    row.update(fields)
    return row


ROWS: List[Dict[str, Any]] = [
    _act_row(
        "pi05-droid",
        action_horizon=15,
        open_loop_horizon=8,
        sustains_seconds=0.533,
        camera_views=["exterior_1", "wrist_left"],
        training_frame_size=[320, 180],
        input_aspect_ratio=1.7778,
        input_resize="pad",
        client_resize={"size": [224, 224], "filter": "bilinear"},
        action_space="joint_delta",
        action_semantics={
            "rows": "joint_delta",
            "controller_interface": "joint_velocity",
            "gripper_interface": "position",
            "to_joint_positions": "offset_q_ref",
            "gripper_binarize_threshold": 0.5,
            "clip": [-1.0, 1.0],
        },
    ),
    _act_row(
        "cosmos3-edge-policy-droid",
        action_horizon=32,
        open_loop_horizon=16,
        sustains_seconds=1.067,
        camera_views=["exterior_1", "exterior_2", "wrist_left"],
        training_frame_size=[640, 360],
        input_aspect_ratio=1.7778,
        input_resize="stretch",
        client_resize={"size": [640, 360], "filter": "bilinear"},
        action_space="joint_absolute",
        action_semantics=dict(_ABSOLUTE_SEMANTICS),
    ),
    _act_row(
        "groot-n1-7-3b-droid",
        action_horizon=16,
        open_loop_horizon=8,
        sustains_seconds=0.533,
        camera_views=["exterior_1", "wrist_left"],
        training_frame_size=[320, 180],
        input_aspect_ratio=None,
        input_resize=None,
        client_resize={"shortest_edge": 256, "filter": "area"},
        action_space="joint_absolute",
        action_semantics=dict(_ABSOLUTE_SEMANTICS),
    ),
    {"id": PREFIX + "jev", "object": "model", "endpoint": "decide", "architecture": "scorer",
     "provider": "TypeSafe", "robot": None, "camera_views": []},
    {"id": PREFIX + "claude-opus-4-8", "object": "model", "endpoint": "chat", "architecture": "llm",
     "provider": "local stand-in", "robot": None, "camera_views": []},
    {"id": PREFIX + "grounding-dino-base", "object": "model", "endpoint": "perceive", "architecture": "det",
     "provider": "local stand-in", "robot": None, "camera_views": []},
    {"id": PREFIX + "siglip-so400m", "object": "model", "endpoint": "perceive", "architecture": "emb",
     "provider": "local stand-in", "robot": None, "camera_views": [], "embedding_dim": 64},
    {"id": PREFIX + "depth-anything-v2-small", "object": "model", "endpoint": "perceive",
     "architecture": "depth", "provider": "local stand-in", "robot": None, "camera_views": []},
]


def rows(endpoint: Optional[str] = None) -> List[Dict[str, Any]]:
    """Copies of the rows (callers may mutate them), optionally only one endpoint's."""
    return [copy.deepcopy(r) for r in ROWS if endpoint in (None, "", r["endpoint"])]


def find(name: str) -> Optional[Dict[str, Any]]:
    """The row whose full id is `name` or whose short id is its last path segment."""
    if not isinstance(name, str) or not name:
        return None
    short = name.rsplit("/", 1)[-1]
    for row in ROWS:
        if row["id"] == name or row["id"].rsplit("/", 1)[-1] == short:
            return row
    return None


def refusal(name: str, endpoint: str) -> Optional[Tuple[int, str]]:
    """(status, detail) when `name` is not a model of `endpoint`, else None."""
    row = find(name)
    if row is None:
        known = ", ".join(r["id"].rsplit("/", 1)[-1] for r in ROWS if r["endpoint"] == endpoint)
        return 404, f"model {name!r} is not in the catalogue; {endpoint} models: {known}"
    if row["endpoint"] != endpoint:
        article = "an" if endpoint[0] in "aeiou" else "a"
        return 400, f"model {row['id']!r} is a {row['endpoint']} model, not {article} {endpoint} model"
    return None


def expected_frame_rule(row: Dict[str, Any]) -> str:
    """Human text of the size rule, for error messages."""
    resize = row.get("client_resize") or {}
    if "size" in resize:
        w, h = resize["size"]
        return f"exactly {w}x{h}"
    if "shortest_edge" in resize:
        n = resize["shortest_edge"]
        return f"shortest edge {n} (or less, for a source that was already smaller)"
    return "any size"


def frame_size_ok(row: Dict[str, Any], size: Tuple[int, int]) -> bool:
    """Is (w, h) what the client's encode() produces for this row's client_resize?

    `size`: exactly W×H (encode() also upsizes). `shortest_edge` n: encode() only shrinks a frame
    whose short edge is above n, so anything it sends has min(w, h) <= n (== n when it shrank)."""
    resize = row.get("client_resize")
    if not resize:
        return True
    w, h = size
    if "size" in resize:
        return [w, h] == list(resize["size"])
    n = int(resize["shortest_edge"])
    return min(w, h) <= n
