"""How a non-2xx answer becomes one of our errors (docs/PROTOCOL.md §3.3): the same rules for the
gateway's answers and the worker's."""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional

from .._errors import AuthError, InvalidRequest, OutOfCredit, SequencesError, Unavailable

__all__ = ["error_from_response"]


def _retry_after_header(headers: Mapping[str, str]) -> Optional[float]:
    value = headers.get("retry-after") if headers is not None else None
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None  # the HTTP-date form is not understood


def error_from_response(status: int, text: str, headers: Optional[Mapping[str, str]] = None) -> SequencesError:
    """Map a non-2xx answer to our exception tree (docs/PROTOCOL.md §3.3)."""
    try:
        body: Any = json.loads(text) if text else None
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser recurses
        body = None
    detail: Any = body.get("detail") if isinstance(body, dict) and body.get("detail") else text
    if not isinstance(detail, dict) and isinstance(body, dict) and body.get("code") == "warming":
        detail = body
    warming = False
    retry_after: Any = None
    job_id = None
    if isinstance(detail, dict):
        warming = detail.get("status") == "warming_up" or detail.get("code") == "warming"
        retry_after = detail.get("retry_after_s")
        job = detail.get("warming_job_id")
        job_id = str(job) if job is not None else None
        message = detail.get("message") or detail.get("detail") or repr(detail)
        message = str(message)
    elif isinstance(detail, str):
        message = detail
    else:
        message = repr(detail)
    if not isinstance(retry_after, (int, float)) or isinstance(retry_after, bool):
        retry_after = None
    if retry_after is None:
        retry_after = _retry_after_header(headers or {})
    if not message:
        message = f"HTTP {status}"

    if status == 401:
        return AuthError(message, status, text)
    if status == 402:
        return OutOfCredit(message, status, text)
    if status == 429:
        return Unavailable(message, status, text, retry_after_s=retry_after)
    if status in (503, 504):
        return Unavailable(message, status, text, retry_after_s=retry_after, warming=warming, job_id=job_id)
    if 400 <= status < 500:
        return InvalidRequest(message, status, text)
    return SequencesError(message, status, text)
