"""Small ASGI layers both servers share: the body-size limit, per-route statistics and a response
that dies mid-body (the `drop` fault)."""

from __future__ import annotations

import json
import logging
import time
from typing import Any, Awaitable, Callable, Dict, Optional, Tuple

from starlette.responses import Response

Scope = Dict[str, Any]
Message = Dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# A client that ignores the 413 and keeps uploading is read and discarded up to this much, so it
# sees the answer instead of a reset; beyond it the connection is simply closed.
_DRAIN_CAP = 64 * 1024 * 1024


async def _send_json(send: Send, status: int, body: Dict[str, Any], headers: Dict[str, str] | None = None) -> None:
    payload = json.dumps(body).encode()
    raw_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": payload})


class BodyLimit:
    """413 for bodies over `limit` bytes (or the smaller limit `per_path` names for a path),
    decided from Content-Length before the body is parsed; chunked bodies are counted as they
    arrive and cut off at the limit."""

    def __init__(self, app: ASGIApp, limit: int, per_path: Dict[str, int] | None = None):
        self.app = app
        self.limit = limit
        self.per_path = dict(per_path or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.per_path.get(scope.get("path", ""), self.limit)
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        where = "this route's" if limit != self.limit else "this server's"
        too_big = f"request body is larger than {where} limit of {limit} bytes"
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                await _send_json(send, 400, {"detail": "Content-Length is not an integer"})
                return
            if length > limit:
                if length <= _DRAIN_CAP:
                    await _drain(receive)
                await _send_json(send, 413, {"detail": f"{too_big} (Content-Length {length})"})
                return
            await self.app(scope, receive, send)
            return
        # No Content-Length (chunked): buffer up to the limit, then hand the body on in one piece.
        chunks, total, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return
            chunks.append(message.get("body", b""))
            total += len(chunks[-1])
            more = message.get("more_body", False)
            if total > limit:
                await _send_json(send, 413, {"detail": too_big})
                return
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _drain(receive: Receive) -> None:
    more = True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            return
        more = message.get("more_body", False)


# Methods and paths are the caller's words: counted under their own name only when the app
# knows them, so the table of statistics stays as small as the app, whatever is asked for.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_PATH = "(other path)"


def route_paths(app: Any) -> frozenset:
    """Every path a (FastAPI/Starlette) app routes, included routers' too."""
    paths = set()
    for route in getattr(app, "routes", ()):
        if isinstance(getattr(route, "path", None), str):
            paths.add(route.path)
        paths |= route_paths(route) if hasattr(route, "routes") else set()
    return frozenset(paths)


class RouteStats:
    """Counts answers per (method path, status) into `record(app_name, route, status)`, paths
    outside `known_paths` (and unusual methods) under one row each; also notes when the request
    started, for perf.handler_ms."""

    def __init__(self, app: ASGIApp, name: str, record: Callable[[str, str, int], None],
                 known_paths: frozenset = frozenset(), arrived: Optional[Callable[[str, str], None]] = None):
        self.app = app
        self.name = name
        self.record = record
        self.arrived = arrived
        self.known_paths = known_paths

    def _row(self, scope: Scope) -> str:
        method = scope["method"] if scope["method"] in _METHODS else "OTHER"
        path = scope["path"] if scope["path"] in self.known_paths else OTHER_PATH
        return f"{method} {path}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope.setdefault("state", {})["t0"] = time.perf_counter()
        status = {"code": 0}
        traffic = not scope["path"].startswith("/admin")  # the harness's own calls are not traffic
        if traffic and self.arrived is not None:
            self.arrived(self.name, self._row(scope))

        async def counting_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, counting_send)
        finally:
            if traffic:
                self.record(self.name, self._row(scope), status["code"])


class DroppedResponse(Response):
    """Announces the whole body, sends half of it and stops: the server then closes the
    connection, so the client sees a response cut off mid-body."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        await send({"type": "http.response.body", "body": self.body[: len(self.body) // 2], "more_body": True})


class _QuietDrops(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "returned without completing response" not in record.getMessage()


def quiet_dropped_responses() -> None:
    """uvicorn logs an error for every dropped response; those are deliberate here."""
    logging.getLogger("uvicorn.error").addFilter(_QuietDrops())


class BearerCheck:
    """401 `{"detail": ...}` unless `accepts(Authorization header)`; paths in `public`, and paths
    under `public_prefixes` (which guard themselves, like /admin), are open. Checked before the
    body is parsed, so a caller without credentials learns nothing else."""

    def __init__(self, app: ASGIApp, accepts: Callable[[str | None], bool], public: frozenset, detail: str,
                 public_prefixes: Tuple[str, ...] = ()):
        self.app = app
        self.accepts = accepts
        self.public = public
        self.detail = detail
        self.public_prefixes = public_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in self.public or (self.public_prefixes and path.startswith(self.public_prefixes)):
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization")
        if not self.accepts(header.decode("latin-1") if header is not None else None):
            await _send_json(send, 401, {"detail": self.detail}, {"WWW-Authenticate": "Bearer"})
            return
        await self.app(scope, receive, send)


def validation_error_response(errors: list) -> Response:
    """FastAPI's 422 list (docs/PROTOCOL.md §3.2 D) without `input`/`ctx`/`url`: inputs may be megabytes, or
    NaN that JSON cannot carry, and are the caller's own anyway."""
    from starlette.responses import JSONResponse

    trimmed = [{k: v for k, v in e.items() if k not in ("input", "ctx", "url")} for e in errors]
    return JSONResponse({"detail": trimmed}, status_code=422)
