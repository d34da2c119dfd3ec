"""How an armed fault turns into an answer, shared by the gateway and the worker routes."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any, Dict, Optional

from starlette.responses import JSONResponse, Response

from .asgi import DroppedResponse
from .faults import FaultBoard

BUSY_BODY = {"error": "overloaded"}  # docs/PROTOCOL.md §3.2 E: no "detail" on purpose


class LenientJSONResponse(JSONResponse):
    """JSON that may carry NaN/Infinity literals: the nan/inf faults must reach the client as
    such (Python's json, and so httpx, reads them back), where Starlette's renderer would refuse."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, allow_nan=True, separators=(",", ":")).encode("utf-8")


async def delay(faults: FaultBoard, route: str) -> float:
    """Sleep for an armed `latency` fault; returns the injected milliseconds (0 if none)."""
    fault = faults.take("latency", route)
    if fault is None:
        return 0.0
    ms = float(fault.get("ms", 0.0))
    jitter = float(fault.get("jitter", 0.0))
    if jitter:
        ms *= 1.0 + random.uniform(-jitter, jitter)
    ms = max(0.0, ms)
    await asyncio.sleep(ms / 1000.0)
    return ms


def refusal(faults: FaultBoard, route: str) -> Optional[Response]:
    """An armed busy (429) or status fault's answer for this request, else None."""
    if faults.take("busy", route) is not None:
        return JSONResponse(BUSY_BODY, status_code=429, headers={"Retry-After": "1"})
    fault = faults.take("status", route)
    if fault is not None:
        code = int(fault.get("code", 500))
        headers = {"Retry-After": "1"} if code in (429, 503, 504) else None
        return JSONResponse({"detail": f"injected fault: status {code} on {route}"}, status_code=code, headers=headers)
    return None


def delivery(faults: FaultBoard, route: str, body: Dict[str, Any], headers: Optional[Dict[str, str]] = None) -> Response:
    """The 200 answer, unless a drop or malformed_json fault spoils it."""
    response = LenientJSONResponse(body, headers=headers)
    if faults.take("drop", route) is not None:
        return DroppedResponse(response.body, headers=headers, media_type="application/json")
    if faults.take("malformed_json", route) is not None:
        cut = response.body[: max(1, len(response.body) // 2)]
        return Response(cut, headers=headers, media_type="application/json")
    return response
