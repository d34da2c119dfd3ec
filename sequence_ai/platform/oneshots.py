"""Deterministic stand-ins for the one-shot endpoints: /v1/decide, /v1/perceive, /v1/chat.

Same input, same answer: every number is derived from a hash of the request, so tests can pin
them, and nothing pretends to be a real model (`provider`/`perf` say "local stand-in").
Perception answers the docs/PROTOCOL.md §4.9 shapes (the public service answers 501 today; a stand-in that
answers lets the client's decoding be exercised end to end).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import struct
from typing import Annotated, Any, Dict, List, Literal, Optional, Union

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from . import catalogue
from .frames import holds_declared_pixels, image_size
from .state import PlatformState

EMBEDDING_DIM = 64
_STAND_IN = {"provider": "local stand-in"}


def _unit(*parts: Any) -> float:
    """A number in [0, 1) from a hash of the parts."""
    text = json.dumps(parts, sort_keys=True, default=str).encode()
    return struct.unpack(">Q", hashlib.sha256(text).digest()[:8])[0] / 2.0**64


def _softmax(logits: List[float]) -> List[float]:
    top = max(logits)
    exps = [math.exp(v - top) for v in logits]
    total = sum(exps)
    return [round(e / total, 6) for e in exps]


def row_or_refusal(name: str, endpoint: str) -> Union[Dict[str, Any], JSONResponse]:
    """The catalogue row, or the 404/400 answer saying why there is none for this endpoint."""
    refused = catalogue.refusal(name, endpoint)
    if refused is not None:
        return JSONResponse({"detail": refused[1]}, status_code=refused[0])
    return catalogue.find(name)


# -- decide ---------------------------------------------------------------------------------------
class Question(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["noul", "choice", "score"]
    instructions: Annotated[str, Field(max_length=4096)] = ""
    criteria: Union[Dict[str, Annotated[str, Field(max_length=4096)]],
                    Annotated[List[Annotated[str, Field(max_length=4096)]], Field(max_length=64)], None] = None


class DecideRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: Annotated[str, Field(min_length=1, max_length=256)]
    state: Any = None
    questions: Annotated[Dict[str, Question], Field(max_length=64)]


def _options(q: Question) -> List[str]:
    if isinstance(q.criteria, dict):
        return list(q.criteria)
    return [str(c) for c in q.criteria or []]


def answer_question(key: str, q: Question, state: Any) -> Dict[str, Any]:
    if q.type == "noul":
        return {"type": "noul", "noul": round(_unit("noul", key, q.instructions, state), 6)}
    options = _options(q)
    probs = _softmax([3.0 * _unit(q.type, key, q.instructions, state, o) for o in options])
    best = max(range(len(options)), key=probs.__getitem__)
    if q.type == "choice":
        return {"type": "choice", "choice": options[best], "probabilities": dict(zip(options, probs)),
                "confidence": probs[best]}
    legend = dict(q.criteria) if isinstance(q.criteria, dict) else {str(i): o for i, o in enumerate(options)}
    return {"type": "score", "score": best, "legend": legend, "probabilities": dict(zip(legend, probs)),
            "confidence": probs[best]}


# -- perceive -------------------------------------------------------------------------------------
class PerceiveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: Annotated[str, Field(min_length=1, max_length=256)]
    task: Literal["detect", "embed", "depth"]
    images: Optional[Annotated[List[str], Field(max_length=64)]] = None
    labels: Optional[Annotated[List[Annotated[str, Field(max_length=256)]], Field(max_length=256)]] = None
    text: Optional[Annotated[List[Annotated[str, Field(max_length=4096)]], Field(max_length=256)]] = None
    box_threshold: Optional[Annotated[float, Field(ge=0.0, le=1.0)]] = None
    text_threshold: Optional[Annotated[float, Field(ge=0.0, le=1.0)]] = None


_TASK_OF = {"det": "detect", "emb": "embed", "depth": "depth"}
MAX_DEPTH_PIXELS = 4096 * 4096
# Depth answers 2 bytes per input pixel (~2.7 after base64), so the whole request is bounded, not
# only each image: 64 images of 640x640, the most the client's encode() produces.
MAX_DEPTH_PIXELS_PER_REQUEST = 64 * 640 * 640


class _Refusal(Exception):
    def __init__(self, detail: str, status: int = 400):
        super().__init__(detail)
        self.detail = detail
        self.status = status


def _sizes(images: List[str]) -> List[tuple]:
    sizes = []
    for i, data in enumerate(images):
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        size = image_size(raw)
        if size is None:
            raise _Refusal(f"images[{i}] is not standard base64 of a complete JPEG or PNG image (URLs are never fetched)")
        if not holds_declared_pixels(raw, size):
            raise _Refusal(f"images[{i}] declares {size[0]}x{size[1]} pixels, more than its {len(raw)} bytes "
                           "can hold; send the real image")
        sizes.append(size)
    return sizes


def _check_depth_budget(sizes: List[tuple]) -> None:
    """Refuse before computing anything: the answer is as big as the images' pixel count."""
    for i, (w, h) in enumerate(sizes):
        if w * h > MAX_DEPTH_PIXELS:
            raise _Refusal(f"images[{i}] is {w}x{h}; depth takes at most {MAX_DEPTH_PIXELS} pixels per image", 413)
    total = sum(w * h for w, h in sizes)
    if total > MAX_DEPTH_PIXELS_PER_REQUEST:
        raise _Refusal(f"these {len(sizes)} images have {total} pixels; depth takes at most "
                       f"{MAX_DEPTH_PIXELS_PER_REQUEST} pixels per request (64 images of 640x640): "
                       "send fewer or smaller images", 413)


def _embedding(*parts: Any) -> List[float]:
    raw = [_unit("emb", *parts, i) - 0.5 for i in range(EMBEDDING_DIM)]
    norm = math.sqrt(sum(v * v for v in raw)) or 1.0
    return [round(v / norm, 7) for v in raw]


def perceive(body: PerceiveRequest) -> Dict[str, Any]:
    images = body.images or []
    if body.task == "embed":
        if not images and not body.text:
            raise _Refusal("embed needs images, text, or both")
        _sizes(images)
        return {"image_embeddings": [_embedding("image", data) for data in images] if images else None,
                "text_embeddings": [_embedding("text", t) for t in body.text] if body.text else None,
                "embedding_dim": EMBEDDING_DIM}
    if not images:
        raise _Refusal(f"{body.task} needs 1..64 images")
    sizes = _sizes(images)
    if body.task == "detect":
        if not body.labels:
            raise _Refusal("detect needs 1..256 labels")
        threshold = body.box_threshold if body.box_threshold is not None else 0.3
        detections = []
        for data, (w, h) in zip(images, sizes):
            entry: Dict[str, List[Any]] = {"boxes": [], "labels": [], "scores": []}
            for label in body.labels:
                score = round(0.2 + 0.8 * _unit("score", data, label), 4)
                if score < threshold:
                    continue
                x0, y0 = _unit("x", data, label) * w * 0.6, _unit("y", data, label) * h * 0.6
                bw, bh = (0.1 + 0.3 * _unit("w", data, label)) * w, (0.1 + 0.3 * _unit("h", data, label)) * h
                entry["boxes"].append([round(x0, 1), round(y0, 1), round(min(w, x0 + bw), 1), round(min(h, y0 + bh), 1)])
                entry["labels"].append(label)
                entry["scores"].append(score)
            detections.append(entry)
        return {"detections": detections}
    _check_depth_budget(sizes)
    import numpy as np  # only depth needs arrays

    buffers, shapes = [], []
    for w, h in sizes:
        # Relative inverse depth, larger = nearer: the floor at the bottom of the frame is nearest.
        rows = np.linspace(0.1, 1.0, h, dtype=np.float32)[:, None]
        cols = 1.0 - 0.1 * np.abs(np.linspace(-1.0, 1.0, w, dtype=np.float32))[None, :]
        buffers.append(base64.b64encode((rows * cols).astype(np.float16).tobytes()).decode())
        shapes.append([h, w])
    return {"depth": buffers, "depth_dtype": "float16", "depth_shape": shapes}


# -- chat -----------------------------------------------------------------------------------------
class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "user", "assistant", "tool"]
    content: Union[str, List[Dict[str, Any]], None] = None


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")  # as the real gateway: unknown keys are a 422 (docs/PROTOCOL.md §4.7)
    model: Annotated[str, Field(min_length=1, max_length=256)]
    messages: Annotated[List[ChatMessage], Field(min_length=1, max_length=256)]
    max_tokens: Optional[Annotated[int, Field(ge=1, le=200000)]] = 1024
    temperature: Optional[Annotated[float, Field(ge=0.0, le=2.0)]] = None
    tools: Optional[Annotated[List[Dict[str, Any]], Field(max_length=128)]] = None


def chat_answer(body: ChatRequest) -> str:
    last = next((m.content for m in reversed(body.messages) if m.role == "user" and isinstance(m.content, str)), "")
    return f"(local stand-in) You said: {last[:200]!r}. Move slowly and keep the gripper clear."


def add_routes(app: FastAPI, state: PlatformState) -> None:
    @app.post("/v1/decide", summary="Score typed questions about a state (deterministic stand-in)")
    async def decide(body: DecideRequest) -> Response:
        row = row_or_refusal(body.model, "decide")
        if isinstance(row, Response):
            return row
        if not body.questions:
            return JSONResponse({"detail": "questions is empty; ask at least one"}, status_code=400)
        for key, q in body.questions.items():
            if q.type != "noul" and len(_options(q)) < 2:
                return JSONResponse({"detail": f"question {key!r} ({q.type}) needs criteria naming at least two "
                                               "options"}, status_code=400)
        answers = {key: answer_question(key, q, body.state) for key, q in body.questions.items()}
        tokens = len(json.dumps(body.model_dump(), default=str)) // 4
        return JSONResponse({"id": "dec_" + hashlib.sha256(repr(answers).encode()).hexdigest()[:8], "model": row["id"],
                             "provider": row.get("provider", "TypeSafe"), "answers": answers,
                             "usage": {"input_tokens": tokens}, "perf": dict(_STAND_IN), "warnings": []})

    @app.post("/v1/perceive", summary="detect / embed / depth (deterministic stand-in)")
    async def perceive_route(body: PerceiveRequest) -> Response:
        row = row_or_refusal(body.model, "perceive")
        if isinstance(row, Response):
            return row
        task = _TASK_OF.get(row.get("architecture", ""))
        if task != body.task:
            return JSONResponse({"detail": f"model {row['id']!r} does {task}, not {body.task}"}, status_code=400)
        try:
            # Depth takes up to a second at the request budget: off the loop, so the gateway answers meanwhile.
            result = await run_in_threadpool(perceive, body)
        except _Refusal as err:
            return JSONResponse({"detail": err.detail}, status_code=err.status)
        n = len(body.images or []) + len(body.text or [])
        return JSONResponse({"id": "per_" + hashlib.sha256(str(n).encode() + body.task.encode()).hexdigest()[:8],
                             "model": row["id"], **result, "usage": {"images": len(body.images or []), "inputs": n},
                             "perf": dict(_STAND_IN), "warnings": []})

    @app.post("/v1/chat", summary="A canned assistant turn (deterministic stand-in)")
    async def chat(body: ChatRequest) -> Response:
        row = row_or_refusal(body.model, "chat")
        if isinstance(row, Response):
            return row
        content = chat_answer(body)
        return JSONResponse({"id": "chat_" + hashlib.sha256(content.encode()).hexdigest()[:8], "model": row["id"],
                             "message": {"role": "assistant", "content": content, "tool_calls": None},
                             "finish_reason": "stop", "usage": {"total_tokens": len(content) // 4 + 10},
                             "perf": dict(_STAND_IN), "warnings": []})
