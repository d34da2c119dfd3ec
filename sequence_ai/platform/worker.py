"""The worker: HTTPS on loopback, one bearer secret, the model contract, a policy.

Routes (docs/PROTOCOL.md §5): POST /act, POST /act/episode_end, GET /ping. Every route, /ping and
/openapi.json included, needs `Bearer <direct_secret>` (docs/PROTOCOL.md Appendix B; /ping's 401 is how a
rotated secret shows, §5.4). Every answer to /act echoes X-Seq-Request-Id; every /act is noted in
the request log the admin API shows.
"""

from __future__ import annotations

import hmac
import math
import time
from typing import Any, Dict, List

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from . import catalogue, injected
from .asgi import BearerCheck, BodyLimit, RouteStats, route_paths, validation_error_response
from .contract import ActRequest, ContractError, EpisodeEndRequest, check_observation, check_rows
from .state import PlatformState

WORKER_BODY_LIMIT = 4 * 1024 * 1024
RID_HEADER = "X-Seq-Request-Id"


def _secret_accepted(state: PlatformState, authorization: str | None) -> bool:
    worker = state.worker
    if worker is None or not authorization or not authorization.startswith("Bearer "):
        return False
    return hmac.compare_digest(authorization[len("Bearer "):].encode(), worker.secret.encode())


def _chunk_body(row: Dict[str, Any], rows: List[List[float]]) -> Dict[str, Any]:
    hz = float(row["control_hz"])
    olh = row.get("open_loop_horizon")
    return {
        "steps": [{"index": i, "values": values} for i, values in enumerate(rows)],
        "robot": row["robot"],
        "action_space": row["action_space"],
        "action_dim": row["action_dim"],
        "control_frequency_hz": hz,
        "covers_seconds": round(len(rows) / hz, 3),
        "open_loop_horizon": olh,
        "sustains_seconds": round(olh / hz, 3) if olh else None,
    }


def _spoil(faults: Any, rows: List[List[float]]) -> List[List[float]]:
    """Apply the output faults (they bypass the output check on purpose: the client must catch them)."""
    if faults.take("nan_actions", "act") is not None:
        rows[len(rows) // 2][0] = math.nan
    if faults.take("inf_actions", "act") is not None:
        rows[len(rows) // 2][-1] = math.inf
    if faults.take("wrong_action_dim", "act") is not None:
        # Rows one value short while action_dim still says the declared width: a chunk that
        # breaks both its own header and the catalogue, whichever the client checks.
        rows = [r[:-1] for r in rows]
    return rows


def build_worker_app(state: PlatformState) -> Any:
    app = FastAPI(title="Sequences local worker", version="1", docs_url=None, redoc_url=None)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        return validation_error_response(exc.errors())

    @app.post("/act", summary="One action chunk for one observation (docs/PROTOCOL.md §5.1)")
    async def act(body: ActRequest, request: Request) -> Response:
        record: Dict[str, Any] = request.scope["state"].setdefault("act_record", {})
        record.update(episode_id=body.episode_id, instruction=body.observation.instruction[:200],
                      views=[f.view for f in body.observation.images],
                      joint_positions=list(body.observation.proprioception.joint_positions), model=body.model)
        # (X-Seq-Request-Id is echoed on every answer by ActLog, below.)
        if state.warming_left_s() > 0:
            return JSONResponse(state.warming_body(), status_code=503,
                                headers={"Retry-After": str(max(1, math.ceil(state.warming_left_s())))})
        refused = injected.refusal(state.faults, "act")
        if refused is not None:
            return refused
        row = catalogue.find(body.model)
        if row is None or row.get("endpoint") != "act":
            return JSONResponse({"detail": f"model {body.model!r} is not an act model this worker serves"},
                                status_code=404)
        try:
            policy_input, usage, warnings = check_observation(body, row)
        except ContractError as err:
            return JSONResponse({"detail": err.detail}, status_code=err.status)
        state.touch_episode(body.episode_id)
        injected_ms = await injected.delay(state.faults, "act")
        t_infer = time.perf_counter()
        try:
            if state.policy_name == "stand-in":
                raw_rows = state.policy(policy_input)  # microseconds: not worth a thread hop
            else:
                # A user's model may take a while; off the loop, the gateway keeps answering meanwhile.
                raw_rows = await run_in_threadpool(state.policy, policy_input)
            rows = check_rows(raw_rows, row)
        except ContractError as err:
            return JSONResponse({"detail": err.detail}, status_code=500)
        except Exception as err:  # a plug-in's bug is a 500 with its text, not a dead worker
            return JSONResponse({"detail": f"policy {state.policy_name} failed: {type(err).__name__}: {err}"},
                                status_code=500)
        inference_ms = (time.perf_counter() - t_infer) * 1000.0 + injected_ms
        rows = _spoil(state.faults, rows)
        handler_ms = (time.perf_counter() - request.scope["state"]["t0"]) * 1000.0
        answer = {
            "action_chunk": _chunk_body(row, rows),
            "usage": {**usage, "observation_tokens": 0, "action_tokens": 0, "total_tokens": 0},
            "perf": {"handler_ms": round(handler_ms, 3), "inference_ms": round(inference_ms, 3),
                     "injected_ms": round(injected_ms, 3), "provider": "local stand-in"
                     if state.policy_name == "stand-in" else f"local plug-in {state.policy_name}"},
            "warnings": warnings,
            "rid": request.headers.get(RID_HEADER),
            "model": row["id"],
        }
        return injected.delivery(state.faults, "act", answer)

    @app.post("/act/episode_end", summary="Forget an episode's state (docs/PROTOCOL.md §5.3)")
    async def episode_end(body: EpisodeEndRequest, request: Request) -> Response:
        refused = injected.refusal(state.faults, "episode_end")
        if refused is not None:
            return refused
        known = state.episodes.pop(body.episode_id or "", None) is not None
        return JSONResponse({"ok": True, "episode_id": body.episode_id, "known": known})

    @app.get("/ping", summary="Liveness: 200 alive, 401 rotated secret (docs/PROTOCOL.md §5.4)")
    async def ping(request: Request) -> Response:
        refused = injected.refusal(state.faults, "ping")
        if refused is not None:
            return refused
        worker = state.worker
        return JSONResponse({"ok": True, "epoch": worker.epoch if worker else None,
                             "warming": state.warming_left_s() > 0})

    # Outermost first: stats (and the handler clock), the request log, the secret, then the body
    # limit: a 401 or 413 is counted and logged like any other answer, and a caller without the
    # secret gets its 401 before a byte of its body is buffered.
    guarded = BearerCheck(BodyLimit(app, WORKER_BODY_LIMIT), lambda header: _secret_accepted(state, header),
                          frozenset(), "direct secret missing or no longer valid; reconnect through the gateway")
    return RouteStats(ActLog(guarded, state), "worker", state.count, known_paths=route_paths(app),
                      arrived=state.arrived)


class ActLog:
    """Notes every /act the worker receives (whatever it answered) in state.act_log, with the
    worker's own time on it (`worker_ms`: from the request's arrival to the start of its answer,
    the model and any injected delay included), and makes sure every answer to it, refusals
    included, echoes X-Seq-Request-Id."""

    def __init__(self, app: Any, state: PlatformState):
        self.app = app
        self.state = state

    async def __call__(self, scope: Dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/act":
            await self.app(scope, receive, send)
            return
        arrived = time.perf_counter()
        rid = dict(scope.get("headers") or []).get(b"x-seq-request-id", b"")
        record: Dict[str, Any] = {"time": time.time(), "rid": rid.decode("latin-1") or None, "status": None,
                                  "worker_ms": None}
        scope.setdefault("state", {})["act_record"] = record
        # Echo only short, printable ids: a header is not a place to reflect arbitrary input.
        echo = rid and len(rid) <= 128 and rid.decode("latin-1").isprintable()

        async def noting_send(message: Dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                record["status"] = message["status"]
                record["worker_ms"] = round((time.perf_counter() - arrived) * 1000.0, 3)
                headers = list(message.get("headers") or [])
                if echo and not any(k.lower() == b"x-seq-request-id" for k, _ in headers):
                    message = {**message, "headers": [*headers, (b"x-seq-request-id", rid)]}
            await send(message)

        try:
            await self.app(scope, receive, noting_send)
        finally:
            self.state.act_log.append(record)
