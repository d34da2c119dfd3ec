"""The admin API (`/admin/...` on the gateway): arm faults, perform one-off incidents, read what
the platform saw. Loopback peers only, and only with the `X-Admin-Token` printed at start.

    POST   /admin/faults     {"kind": ..., params}  arm a request fault or perform an incident
    GET    /admin/faults                            the armed faults
    DELETE /admin/faults[?kind=]                    disarm (all, or one kind); also ends a cold start,
                                                    restores the lease TTL and brings a downed worker up
    GET    /admin/requests[?limit=]                 the recent /act requests the worker received
    GET    /admin/stats                             answers per app, route and status
    GET    /admin/arrivals                          requests arrived per "app route", before their answer
    GET    /admin/reports                           the client telemetry the gateway ingested
    GET    /admin/worker                            url, fingerprint, epoch, lease ttl, down?
    POST   /admin/reset                             faults, logs, stats, lease and cold start reset
"""

from __future__ import annotations

import hmac
import json
import re
from typing import Annotated, Any, Dict, List, Literal, Optional

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .faults import REQUEST_FAULTS
from .state import ACT_LOG_SIZE, REPORTS_KEPT, PlatformState
from .worker_process import WORKER_ROUTES

INCIDENTS = ("warming", "lease_ttl", "rotate_secret", "restart_worker", "worker_down", "worker_up")
FaultKind = Literal["warming", "lease_ttl", "rotate_secret", "restart_worker", "worker_down", "worker_up",
                    "latency", "busy", "status", "drop", "malformed_json", "nan_actions", "inf_actions",
                    "wrong_action_dim", "bad_fingerprint"]
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}


class FaultSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: FaultKind
    # which requests (request faults only): next `count`, a `fraction` (seeded), or all until cleared
    count: Optional[Annotated[int, Field(ge=1)]] = None
    fraction: Optional[Annotated[float, Field(ge=0.0, le=1.0)]] = None
    seed: Optional[int] = None
    route: Optional[Literal["act", "connect", "ready", "episode_end", "ping"]] = None
    # warming
    seconds: Optional[Annotated[float, Field(ge=0.0, le=86400.0)]] = None
    eta_s: Optional[Annotated[float, Field(ge=0.0)]] = None
    form: Optional[Literal["detail", "code"]] = None
    ready_status: Optional[Literal[200, 503]] = None
    # latency
    ms: Optional[Annotated[float, Field(ge=0.0, le=600000.0)]] = None
    jitter: Optional[Annotated[float, Field(ge=0.0, le=1.0)]] = None
    # status
    code: Optional[Annotated[int, Field(ge=400, le=599)]] = None
    # lease_ttl
    ttl_s: Optional[Annotated[float, Field(ge=0.0)]] = None
    # restart_worker
    same_port: Optional[bool] = None


def parse_fault_flag(text: str) -> FaultSpec:
    """`KIND[:key=value,...]` (the CLI's --fault) as the FaultSpec the admin API would take from
    `{"kind": KIND, key: value, ...}`; values are read as JSON when they parse, else as strings.
    `status_NNN` is short for `status:code=NNN`. Raises ValueError naming what is wrong."""
    kind, _, rest = text.strip().partition(":")
    fields: Dict[str, Any] = {"kind": kind}
    shorthand = re.fullmatch(r"status_(\d{3})", kind)
    if shorthand:
        fields.update(kind="status", code=int(shorthand.group(1)))
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"{item!r} in {text!r} is not key=value")
        try:
            fields[key.strip()] = json.loads(value)
        except ValueError:
            fields[key.strip()] = value.strip()
    try:
        return FaultSpec.model_validate(fields)
    except ValidationError as err:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'kind'}: {e['msg']}" for e in err.errors())
        raise ValueError(f"{text!r}: {problems}") from None


def _admin_guard(state: PlatformState) -> Any:
    async def guard(request: Request) -> None:
        peer = request.client.host if request.client else ""
        if peer not in _LOOPBACK:
            raise HTTPException(403, f"the admin API answers loopback peers only, not {peer}")
        token = request.headers.get("x-admin-token", "")
        if not hmac.compare_digest(token.encode(), state.admin_token.encode()):
            raise HTTPException(401, "missing or wrong X-Admin-Token (printed by the platform at start)")

    return guard


def worker_view(state: PlatformState) -> Dict[str, Any]:
    w = state.worker
    return {"worker_url": w.url if w else None, "cert_fingerprint": w.fingerprint if w else None,
            "epoch": w.epoch if w else None, "lease_ttl_s": state.lease_ttl_s, "worker_down": state.worker_down,
            "warming_left_s": round(state.warming_left_s(), 3), "policy": state.policy_name}


async def apply_fault(state: PlatformState, spec: FaultSpec) -> Dict[str, Any]:
    """Arm or perform one fault; raises ValueError with a readable reason if it makes no sense."""
    if spec.kind in INCIDENTS:
        selectors = {k: v for k, v in (("count", spec.count), ("fraction", spec.fraction), ("route", spec.route))
                     if v is not None}
        if selectors:
            raise ValueError(f"{spec.kind} happens at once; {', '.join(selectors)} only apply to request faults")
    link = state.worker_link
    if spec.kind == "warming":
        if spec.seconds is None:
            raise ValueError("warming needs seconds (how long the cold start lasts)")
        cold = state.start_cold(spec.seconds, spec.eta_s, spec.form or "detail", spec.ready_status or 200)
        if link is not None:
            await link.call("cold", cold=cold)  # the same deadline: both read the system's monotonic clock
        return {"ok": True, "kind": "warming", "seconds": spec.seconds, "eta_s": cold.eta_s, "form": cold.form,
                "warming_job_id": cold.job_id}
    if spec.kind == "lease_ttl":
        if spec.ttl_s is None:
            raise ValueError("lease_ttl needs ttl_s")
        state.lease_ttl_s = spec.ttl_s
        return {"ok": True, "kind": "lease_ttl", "ttl_s": spec.ttl_s}
    if spec.kind == "rotate_secret":
        if link is None:
            state.rotate_secret()
        else:
            state.worker = await link.call("rotate_secret")
        return {"ok": True, "kind": "rotate_secret", "worker": worker_view(state)}
    if spec.kind == "restart_worker":
        await _restart_worker(state, True if spec.same_port is None else spec.same_port)
        return {"ok": True, "kind": "restart_worker", "worker": worker_view(state)}
    if spec.kind in ("worker_down", "worker_up"):
        await _set_worker_running(state, spec.kind == "worker_up")
        return {"ok": True, "kind": spec.kind, "worker": worker_view(state)}
    params = {k: v for k, v in (("ms", spec.ms), ("jitter", spec.jitter), ("code", spec.code)) if v is not None}
    if spec.kind == "latency" and spec.ms is None:
        raise ValueError("latency needs ms")
    route = spec.route or ("connect" if spec.kind == "bad_fingerprint" else "act")
    selection = {"route": route, "count": spec.count, "fraction": spec.fraction, "seed": spec.seed}
    if link is not None and route in WORKER_ROUTES:  # fired by the worker process: armed there
        armed = await link.call("arm_fault", kind=spec.kind, fault_id=state.faults.next_id(), **selection, **params)
    else:
        armed = state.faults.arm(spec.kind, **selection, **params).as_dict()
    return {"ok": True, "kind": spec.kind, "fault": armed}


def _worker_process(state: PlatformState) -> Any:
    if state.worker_link is None:
        raise HTTPException(503, "this gateway runs without a worker process")
    return state.worker_link


async def _restart_worker(state: PlatformState, same_port: bool) -> None:
    """While the worker restarts, connect answers 503 (no worker): a client never gets the old
    identity for the new worker, nor the new one for the old; the new one serves once named."""
    link = _worker_process(state)
    state.worker = None
    state.worker = await link.call("restart", same_port=same_port)
    state.worker_down = False
    await link.call("serve")


async def _set_worker_running(state: PlatformState, running: bool) -> None:
    await _worker_process(state).call("running", running=running)
    state.worker_down = not running


async def _faults(state: PlatformState) -> List[Dict[str, Any]]:
    remote = await state.worker_link.call("faults") if state.worker_link is not None else []
    return sorted(state.faults.listing() + remote, key=lambda fault: fault["id"])


async def _clear(state: PlatformState, kind: Optional[str]) -> int:
    cleared = state.faults.clear(kind)
    if state.worker_link is not None:
        cleared += await state.worker_link.call("clear_faults", kind=kind)
    return cleared


async def _end_cold_start(state: PlatformState) -> None:
    state.cold_start = None
    if state.worker_link is not None:
        await state.worker_link.call("cold", cold=None)


def build_admin_router(state: PlatformState) -> APIRouter:
    router = APIRouter(prefix="/admin", tags=["admin"], dependencies=[Depends(_admin_guard(state))])

    @router.post("/faults", summary="Arm a request fault or perform an incident")
    async def post_fault(spec: FaultSpec) -> Dict[str, Any]:
        try:
            return await apply_fault(state, spec)
        except ValueError as err:
            raise HTTPException(400, str(err)) from None

    @router.get("/faults", summary="The armed request faults")
    async def get_faults() -> Dict[str, Any]:
        return {"faults": await _faults(state), "worker": worker_view(state), "kinds": {
            "request": sorted(REQUEST_FAULTS), "incidents": list(INCIDENTS)}}

    @router.delete("/faults", summary="Disarm faults (all, or one kind); also ends a cold start")
    async def clear_faults(kind: Optional[str] = Query(None, max_length=64)) -> Dict[str, Any]:
        cleared = await _clear(state, kind)
        if kind in (None, "warming"):
            await _end_cold_start(state)
        if kind in (None, "lease_ttl"):
            state.lease_ttl_s = state.default_lease_ttl_s
        if kind in (None, "worker_down") and state.worker_down:
            await _set_worker_running(state, True)
        return {"ok": True, "cleared": cleared}

    @router.get("/requests", summary="Recent /act requests the worker received, oldest first")
    async def requests(limit: int = Query(100, ge=1, le=ACT_LOG_SIZE)) -> Dict[str, Any]:
        if state.worker_link is not None:
            return {"requests": await state.worker_link.call("requests", limit=limit)}
        return {"requests": list(state.act_log)[-limit:]}

    @router.get("/stats", summary="Answers per app, route and status")
    async def stats() -> Dict[str, Any]:
        remote = await state.worker_link.call("stats") if state.worker_link is not None else {}
        return {"stats": {**state.stats, **remote}}

    @router.get("/arrivals", summary="Requests that arrived per app and route, counted before they are answered")
    async def arrivals() -> Dict[str, Any]:
        remote = await state.worker_link.call("arrivals") if state.worker_link is not None else {}
        return {"arrivals": {**state.arrivals, **remote}}

    @router.get("/reports", summary="Client telemetry reports ingested by /v1/reports/act")
    async def reports(limit: int = Query(100, ge=1, le=REPORTS_KEPT)) -> Dict[str, Any]:
        return {"reports": [json.loads(text) for text in list(state.reports)[-limit:]]}

    @router.get("/worker", summary="The worker's current identity and lease settings")
    async def worker() -> Dict[str, Any]:
        return worker_view(state)

    @router.post("/reset", summary="Clear faults, logs, stats; lease and cold start back to defaults")
    async def reset() -> Dict[str, Any]:
        state.reset()
        if state.worker_link is not None:
            await state.worker_link.call("reset")  # its faults, log, stats, episodes; up again
            state.worker_down = False
        return {"ok": True, "worker": worker_view(state)}

    return router
