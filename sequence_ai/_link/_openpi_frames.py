"""One observation as an openpi request, and one openpi answer as the chunk the loop reads, both by the card.

The loop hands the link what it hands a Sequences worker: the observation on the wire (frames as
base64 JPEG/PNG, proprioception, instruction). Here each view the card names becomes an H×W×3
uint8 array under its wire key, at the card's image size (frames built for the card's row already
are; others are resized as the card says, `pad` being openpi's `resize_with_pad`), each state part
a float array under its key, and the instruction goes under the prompt key. An answer's actions
must be a finite 2-D array as wide as the card says; anything else is refused before a row is played.
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any, Dict, Mapping

from .._cards import Card
from .._errors import InvalidRequest, SequencesError

__all__ = ["chunk_answer", "openpi_request"]

MAX_ACTION_MAGNITUDE = 1e6  # the bound the chunk parser applies to every value (_act/_chunk.py)


def _pixels(data: Any, view: str, card: Card) -> Any:
    import numpy as np
    from PIL import Image

    if not isinstance(data, str):
        raise InvalidRequest(f"view {view!r}: the frame is not a base64 string")
    try:
        raw = base64.b64decode(data, validate=True)
        with Image.open(io.BytesIO(raw)) as img:
            img = img.convert("RGB")
            width, height = card.image_size
            if img.size != (width, height):
                img = _resized(img, width, height, card.image_resize)
            return np.asarray(img, dtype=np.uint8)
    except (binascii.Error, ValueError, OSError) as exc:
        raise InvalidRequest(f"view {view!r}: not a JPEG or PNG frame ({exc})") from None


def _resized(img: Any, width: int, height: int, mode: str) -> Any:
    from PIL import Image

    if mode == "stretch":
        return img.resize((width, height), Image.BILINEAR)
    # pad: keep the aspect ratio, centre on black (openpi's resize_with_pad geometry: truncating division)
    ratio = max(img.width / width, img.height / height)
    inner = (int(img.width / ratio), int(img.height / ratio))
    canvas = Image.new("RGB", (width, height))
    canvas.paste(img.resize(inner, Image.BILINEAR), ((width - inner[0]) // 2, (height - inner[1]) // 2))
    return canvas


def openpi_request(card: Card, observation: Mapping[str, Any]) -> Dict[str, Any]:
    """The openpi request map for one observation on the wire (`Observation.to_wire()`)."""
    import numpy as np

    frames: Dict[str, Any] = {}
    for frame in observation.get("images") or []:
        if isinstance(frame, Mapping) and isinstance(frame.get("view"), str):
            frames[frame["view"]] = frame.get("data")  # the newest frame of a view is the one read
    request: Dict[str, Any] = {}
    for view, key in card.views:
        if view not in frames:
            raise InvalidRequest(f"{card.name} reads view {view!r} (wire key {key!r}) but the observation has "
                                 f"{sorted(frames) or 'no frames'}")
        request[key] = _pixels(frames[view], view, card)
    proprioception = observation.get("proprioception") or {}
    for part, key, width in card.state:
        values = proprioception.get(part) if isinstance(proprioception, Mapping) else None
        if not isinstance(values, (list, tuple)) or len(values) != width:
            got = "none" if values is None else f"{len(values)}" if isinstance(values, (list, tuple)) else "not a list"
            raise InvalidRequest(f"{card.name} reads {width} value(s) of {part} (wire key {key!r}); got {got}")
        request[key] = np.asarray(values, dtype=np.float64)
    instruction = observation.get("instruction")
    if not isinstance(instruction, str):
        raise InvalidRequest("the observation has no instruction for the prompt")
    request[card.prompt_key] = instruction
    return request


def chunk_answer(card: Card, answer: Any, *, model: str, rid: str) -> Dict[str, Any]:
    """The answer as a worker's /act answer (`_act._chunk.parse_prediction` reads it), or SequencesError."""
    import numpy as np

    if not isinstance(answer, Mapping):
        raise SequencesError(f"malformed answer from the openpi server: a {type(answer).__name__}, not a map")
    actions = answer.get(card.actions_key)
    if not isinstance(actions, np.ndarray) or actions.ndim != 2 or actions.shape[0] < 1:
        shape = getattr(actions, "shape", None)
        raise SequencesError(f"malformed answer from the openpi server: {card.actions_key!r} is not an H×D array"
                             f" ({'missing' if actions is None else f'shape {shape}' if shape else type(actions).__name__})")
    width = int(actions.shape[1])
    if width != card.action_dim:
        raise SequencesError(f"the openpi server sent {width}-wide actions but model card {card.name} declares "
                             f"action_dim {card.action_dim}; refusing to play them")
    rows = actions.astype(np.float64)
    if not np.all(np.isfinite(rows)) or float(np.max(np.abs(rows))) > MAX_ACTION_MAGNITUDE:
        raise SequencesError("the openpi server sent actions that are not finite or are out of range; "
                             "refusing to play them")
    timing = answer.get("server_timing")
    perf = {k: float(v) for k, v in (timing.items() if isinstance(timing, Mapping) else ())
            if isinstance(k, str) and isinstance(v, (int, float, np.number)) and not isinstance(v, bool)}
    return {
        "id": rid,
        "model": model,
        "action_chunk": {
            "steps": rows.tolist(), "robot": card.robot, "action_space": card.action_space,
            "action_dim": width, "control_frequency_hz": card.control_hz,
            "covers_seconds": round(len(rows) / card.control_hz, 6), "open_loop_horizon": card.open_loop_horizon,
        },
        "perf": perf,
    }
