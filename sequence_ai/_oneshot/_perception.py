"""Perception: detect / embed / depth on our own workers (docs/PROTOCOL.md §4.9) — one request, one
answer, waiting through a cold start and reporting progress (`on_warming`).

Public as `sequence_ai.detect` ... and as the module `sequence_ai.perceive`.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from .._catalogue._models import resolve_model
from .._errors import InvalidArgumentType, InvalidRequest, SequencesError
from .._extras import install_hint
from .._net._http import gateway_call, require_api_key, resolve_base_url
from .._vision._encode import ImageExtraMissing, encode
from .._warming import WarmWait, pause_within
from .._wire import Model
from ._calls import envelope

__all__ = ["DepthResult", "DetectResult", "EmbedResult", "Perception", "depth", "detect", "embed"]

MAX_IMAGES = 64
MAX_LABELS = 256
MAX_TEXTS = 256
PERCEIVE_ATTEMPT_TIMEOUT_S = 60.0
PERCEIVE_STARTUP_TIMEOUT_S = 420.0
DEFAULT_WARMING_ETA_S = 20.0
_TASK_OF_ARCHITECTURE = {"det": "detect", "emb": "embed", "depth": "depth"}

_sleep = time.sleep  # no handle to interrupt: Ctrl-C ends it. Tests shorten waits by replacing it


@dataclass(frozen=True)
class Perception:
    """A perception answer. Only the fields of its task are set: detect → `detections` (one
    entry per image, boxes in original-image pixels); embed → `image_embeddings`,
    `text_embeddings`, `embedding_dim`; depth → `depth` (one float32 H×W array per image:
    relative inverse depth, larger = nearer)."""

    task: str
    id: str = ""
    model: str = ""
    detections: Optional[List[Dict[str, Any]]] = None
    image_embeddings: Optional[List[List[float]]] = None
    text_embeddings: Optional[List[List[float]]] = None
    embedding_dim: Optional[int] = None
    depth: Optional[List[Any]] = None
    usage: Dict[str, Any] = field(default_factory=dict)
    perf: Dict[str, Any] = field(default_factory=dict)
    warnings: List[Any] = field(default_factory=list)
    raw: Dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class DetectResult(Perception):
    """detect()'s answer: `detections`, one entry per image."""


@dataclass(frozen=True)
class EmbedResult(Perception):
    """embed()'s answer: `image_embeddings`, `text_embeddings`, `embedding_dim`."""


@dataclass(frozen=True)
class DepthResult(Perception):
    """depth()'s answer: `maps` (also `depth`), one float32 H×W array per image."""

    @property
    def maps(self) -> List[Any]:
        return self.depth or []


WarmingCallback = Callable[[float, float], None]


def _frames(images: Any, row: Model, *, required: bool) -> List[str]:
    if images is None:
        frames: List[Any] = []
    elif isinstance(images, (list, tuple)):
        frames = list(images)
    else:
        frames = [images]
    if required and not frames:
        raise InvalidRequest(f"{row.short_id} needs 1..{MAX_IMAGES} images")
    if len(frames) > MAX_IMAGES:
        raise InvalidRequest(f"{len(frames)} images is more than the {MAX_IMAGES} one perceive call takes")
    return [encode(frame, row) for frame in frames]


def _perceive(
    model: Union[Model, str],
    task: str,
    fields: Dict[str, Any],
    images: Any,
    *,
    on_warming: Optional[WarmingCallback],
    startup_timeout_s: float,
    base_url: Optional[str],
    api_key: Optional[str],
) -> Dict[str, Any]:
    base = resolve_base_url(base_url)
    key = require_api_key(api_key, base)
    row = resolve_model(model, endpoint="perceive", base_url=base, api_key=key)
    row_task = _TASK_OF_ARCHITECTURE.get(row.architecture)
    if row_task != task:
        raise InvalidRequest(f"{row.short_id} does {row_task or row.architecture or 'an unknown task'}, not {task}")
    body: Dict[str, Any] = {"model": row.id, "task": task, **fields}
    encoded = _frames(images, row, required=task != "embed")
    if encoded or task != "embed":
        body["images"] = encoded
    def attempt(read_timeout_s: float) -> Dict[str, Any]:
        return gateway_call("POST", base, "/v1/perceive", api_key=key, json_body=body,
                            timeout_s=PERCEIVE_ATTEMPT_TIMEOUT_S)

    warm = WarmWait(startup_timeout_s, lambda seconds: _sleep(seconds), on_warming,
                    pause=pause_within(DEFAULT_WARMING_ETA_S))
    answer = warm.run(attempt)[0]
    if not isinstance(answer, dict):
        raise SequencesError("malformed /v1/perceive answer: not a JSON object")
    return answer


def _envelope(task: str, answer: Dict[str, Any]) -> Dict[str, Any]:
    return {"task": task, **envelope(answer)}


def detect(
    model: Union[Model, str],
    images: Any,
    labels: Sequence[str],
    *,
    box_threshold: Optional[float] = None,
    text_threshold: Optional[float] = None,
    on_warming: Optional[WarmingCallback] = None,
    startup_timeout_s: float = PERCEIVE_STARTUP_TIMEOUT_S,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
) -> DetectResult:
    """Open-vocabulary boxes for `labels` in one frame or a list of frames."""
    if isinstance(labels, str) or not isinstance(labels, Sequence):
        raise InvalidArgumentType("labels must be a list of strings, e.g. ['cup', 'gripper']")
    if not 1 <= len(labels) <= MAX_LABELS:
        raise InvalidRequest(f"detect takes 1..{MAX_LABELS} labels (got {len(labels)})")
    fields: Dict[str, Any] = {"labels": [str(label) for label in labels]}
    if box_threshold is not None:
        fields["box_threshold"] = box_threshold
    if text_threshold is not None:
        fields["text_threshold"] = text_threshold
    answer = _perceive(model, "detect", fields, images, on_warming=on_warming,
                       startup_timeout_s=startup_timeout_s, base_url=base_url, api_key=api_key)
    detections = answer.get("detections")
    if not isinstance(detections, list) or not all(isinstance(d, dict) for d in detections):
        raise SequencesError("malformed detect answer: 'detections' is not a list of objects")
    return DetectResult(detections=detections, **_envelope("detect", answer))


def embed(
    model: Union[Model, str],
    images: Any = None,
    text: Optional[Sequence[str]] = None,
    *,
    on_warming: Optional[WarmingCallback] = None,
    startup_timeout_s: float = PERCEIVE_STARTUP_TIMEOUT_S,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
) -> EmbedResult:
    """L2-normalised embeddings of frames and/or strings (at least one of the two)."""
    if isinstance(text, str):
        text = [text]
    if images is None and not text:
        raise InvalidRequest("embed needs images, text, or both")
    fields: Dict[str, Any] = {}
    if text:
        if len(text) > MAX_TEXTS:
            raise InvalidRequest(f"embed takes at most {MAX_TEXTS} texts (got {len(text)})")
        fields["text"] = [str(t) for t in text]
    answer = _perceive(model, "embed", fields, images, on_warming=on_warming,
                       startup_timeout_s=startup_timeout_s, base_url=base_url, api_key=api_key)
    image_vectors, text_vectors = answer.get("image_embeddings"), answer.get("text_embeddings")
    for name, vectors in (("image_embeddings", image_vectors), ("text_embeddings", text_vectors)):
        if vectors is not None and not (isinstance(vectors, list) and all(isinstance(v, list) for v in vectors)):
            raise SequencesError(f"malformed embed answer: {name!r} is not a list of vectors")
    dim = answer.get("embedding_dim")
    return EmbedResult(
        image_embeddings=image_vectors,
        text_embeddings=text_vectors,
        embedding_dim=dim if isinstance(dim, int) and not isinstance(dim, bool) else None,
        **_envelope("embed", answer),
    )


def _depth_arrays(answer: Dict[str, Any]) -> List[Any]:
    try:
        import numpy as np
    except ImportError:
        raise ImageExtraMissing(f"decoding depth maps needs numpy: {install_hint('image')}") from None
    buffers, shapes = answer.get("depth"), answer.get("depth_shape")
    dtype = answer.get("depth_dtype") or "float16"
    if not isinstance(buffers, list) or not isinstance(shapes, list) or len(buffers) != len(shapes):
        raise SequencesError("malformed depth answer: 'depth' and 'depth_shape' must be lists of equal length")
    if dtype not in ("float16", "float32"):
        raise SequencesError(f"malformed depth answer: unknown depth_dtype {dtype!r}")
    arrays = []
    for index, (data, shape) in enumerate(zip(buffers, shapes)):
        try:
            raw = base64.b64decode(data, validate=True)
            arrays.append(np.frombuffer(raw, dtype=dtype).reshape([int(s) for s in shape]).astype(np.float32))
        except (TypeError, ValueError, OverflowError) as exc:  # OverflowError: an infinite dimension
            raise SequencesError(f"malformed depth answer: map {index} does not decode to {shape}: {exc}") from None
    return arrays


def depth(
    model: Union[Model, str],
    images: Any,
    *,
    on_warming: Optional[WarmingCallback] = None,
    startup_timeout_s: float = PERCEIVE_STARTUP_TIMEOUT_S,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
) -> DepthResult:
    """Relative inverse depth (larger = nearer) of one frame or a list; decoding needs numpy."""
    answer = _perceive(model, "depth", {}, images, on_warming=on_warming,
                       startup_timeout_s=startup_timeout_s, base_url=base_url, api_key=api_key)
    return DepthResult(depth=_depth_arrays(answer), **_envelope("depth", answer))
