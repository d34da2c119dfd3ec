"""The gateway: plain HTTP on loopback. Catalogue, account, readiness, admission (connect),
telemetry ingest and the one-shot endpoints (docs/PROTOCOL.md §4), plus the admin API (admin.py).

Every route except /v1/models and /v1/health needs `Authorization: Bearer <key in the keystore>`.
"""

from __future__ import annotations

import datetime
import json
import math
import secrets
from typing import Annotated, Any, Dict, List, Optional

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from . import catalogue, injected, oneshots
from .admin import build_admin_router
from .asgi import BearerCheck, BodyLimit, RouteStats, route_paths, validation_error_response
from .state import PlatformState

GATEWAY_BODY_LIMIT = 16 * 1024 * 1024  # perceive takes up to 64 images
# The client posts at most 64 reports of ~0.5 KB a batch; what is kept is bounded by both limits
# (1024 reports of at most REPORT_LIMIT bytes, stored as their JSON text).
REPORTS_BODY_LIMIT = 1024 * 1024
REPORT_LIMIT = 8 * 1024
PUBLIC_PATHS = frozenset({"/v1/models", "/v1/health", "/openapi.json"})
ENDPOINTS = ("act", "chat", "perceive", "decide")


class ConnectRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # later clients add keys (docs/PROTOCOL.md §14); ignore them
    model: Annotated[str, Field(min_length=1, max_length=256)]
    session: Optional[Annotated[str, Field(max_length=128)]] = None
    embodiment: Optional[Annotated[str, Field(max_length=128)]] = None


class ActReports(BaseModel):
    reports: Annotated[List[Dict[str, Any]], Field(max_length=1024)]


def _warming(state: PlatformState) -> JSONResponse:
    left = max(1, math.ceil(state.warming_left_s()))
    return JSONResponse(state.warming_body(), status_code=503, headers={"Retry-After": str(left)})


def build_gateway_app(state: PlatformState) -> Any:
    # No Swagger/ReDoc pages: they make the browser fetch scripts from a CDN, and nothing here
    # should cause traffic off loopback. The document itself is at /openapi.json.
    app = FastAPI(title="Sequences local gateway", version="1", docs_url=None, redoc_url=None,
                  description="Loopback stand-in for the Sequences gateway (see docs/PLATFORM.md).")

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> Response:
        return validation_error_response(exc.errors())

    @app.get("/v1/health", summary="Liveness (no key)")
    async def health() -> Dict[str, Any]:
        return {"ok": True, "backend": "local", "auth": "keystore"}

    @app.get("/v1/models", summary="The catalogue (no key)")
    async def models(endpoint: Optional[str] = Query(None, max_length=32)) -> Response:
        if endpoint not in (None, "", *ENDPOINTS):
            return JSONResponse({"detail": f"endpoint must be one of {', '.join(ENDPOINTS)}; got {endpoint!r}"},
                                status_code=400)
        return JSONResponse({"object": "list", "data": catalogue.rows(endpoint)})

    @app.get("/v1/account", summary="Balance, usage and limits of the key's account")
    async def account() -> Dict[str, Any]:
        return {"balance": {"balance": 100.0, "currency": "USD"},
                "usage": {"policies": 0, "benchmarks": 0},
                "limits": {"max_gpus_per_user": 2, "daily_spend_cap_per_user_usd": 50}}

    @app.get("/v1/act/ready", summary="Is the model's worker warm? (not billed)")
    async def ready(model: str = Query(..., min_length=1, max_length=256)) -> Response:
        await injected.delay(state.faults, "ready")
        refused = injected.refusal(state.faults, "ready")
        if refused is not None:
            return refused
        row = oneshots.row_or_refusal(model, "act")
        if isinstance(row, Response):
            return row
        if state.warming_left_s() > 0:
            cold = state.cold_start
            assert cold is not None
            if cold.ready_status == 503:
                return _warming(state)
            return JSONResponse({"ready": False, "eta_s": cold.eta_s, "status": "starting", "model": row["id"],
                                 "detail": "worker is loading the model"})
        return JSONResponse({"ready": True, "eta_s": None, "status": "running", "model": row["id"]})

    @app.post("/v1/act/connect", summary="Admission: where the worker is, its pin, its secret, a lease")
    async def connect(body: ConnectRequest) -> Response:
        await injected.delay(state.faults, "connect")
        refused = injected.refusal(state.faults, "connect")
        if refused is not None:
            return refused
        row = oneshots.row_or_refusal(body.model, "act")
        if isinstance(row, Response):
            return row
        if state.warming_left_s() > 0:
            return _warming(state)
        worker = state.worker
        if worker is None:
            return JSONResponse({"detail": "no worker is running"}, status_code=503)
        fingerprint = worker.fingerprint
        if state.faults.take("bad_fingerprint", "connect") is not None:
            fingerprint = secrets.token_hex(32)  # a well-formed pin of some other certificate
        ttl = float(state.lease_ttl_s)
        expires = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=ttl)
        cameras = _cameras(row)
        answer = {
            "worker_url": worker.url,
            "cert_fingerprint": fingerprint,
            "direct_secret": worker.secret,
            "lease": {"ttl_s": ttl, "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"), "epoch": worker.epoch},
            "warming": False,
            "action": {"robot": row["robot"], "action_space": row["action_space"], "action_dim": row["action_dim"],
                       "control_frequency_hz": row["control_hz"]},
            "observation": {"cameras": cameras, "proprio": dict(row.get("state_layout") or {})},
            "embodiment": body.embodiment,
            "model": row["id"],
        }
        return injected.delivery(state.faults, "connect", answer)

    @app.post("/v1/reports/act", summary="Client telemetry ingest")
    async def reports(body: ActReports) -> Response:
        texts = []
        for i, report in enumerate(body.reports):
            try:
                texts.append(json.dumps(report, separators=(",", ":"), allow_nan=False))
            except ValueError:
                return JSONResponse({"detail": f"reports[{i}] holds NaN or Infinity, which JSON has no words for "
                                               "(nothing of this batch was kept)"}, status_code=422)
        for i, text in enumerate(texts):
            if len(text) > REPORT_LIMIT:
                return JSONResponse({"detail": f"reports[{i}] is {len(text)} bytes of JSON; at most {REPORT_LIMIT} "
                                               "per report (nothing of this batch was kept)"}, status_code=413)
        state.reports.extend(texts)
        return JSONResponse({"ok": True, "received": len(texts)})

    oneshots.add_routes(app, state)
    app.include_router(build_admin_router(state))
    # /admin has its own guard (loopback peer and X-Admin-Token), not the account key.
    # The key is checked before the body limit reads anything: a caller without one gets its 401
    # before a byte of its body is buffered.
    limited = BodyLimit(app, GATEWAY_BODY_LIMIT, per_path={"/v1/reports/act": REPORTS_BODY_LIMIT})
    guarded = BearerCheck(limited, state.keystore.accepts, PUBLIC_PATHS,
                          "missing or unknown API key: send Authorization: Bearer <key> (SEQUENCES_API_KEY)",
                          public_prefixes=("/admin/",))
    return RouteStats(guarded, "gateway", state.count, known_paths=route_paths(app), arrived=state.arrived)


def _cameras(row: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    resize = row.get("client_resize") or {}
    if "size" in resize:
        w, h = resize["size"]
        geometry: Dict[str, Any] = {"width": w, "height": h}
    else:
        geometry = {"shortest_edge": resize.get("shortest_edge")}
    return {view: dict(geometry) for view in row.get("camera_views") or []}
