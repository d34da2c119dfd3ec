"""Talking to the gateway: where it is, which key, and how an answer becomes an error.

The error mapping follows WIRE.md §3: the same rules for gateway and worker answers.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Optional

import httpx

from ._errors import (
    AuthError,
    InvalidRequest,
    OutOfCredit,
    SequencesError,
    Unavailable,
)
from ._version import __version__

DEFAULT_BASE_URL = "https://api.generalsequences.com"
CONSOLE_URL = "https://app.generalsequences.com/"
USER_AGENT = f"sequence-ai-python/{__version__}"


def resolve_base_url(base_url: Optional[str] = None) -> str:
    """`base_url=` first, then $SEQUENCES_BASE_URL, then the public gateway; no trailing slash."""
    value = base_url if base_url is not None else os.environ.get("SEQUENCES_BASE_URL")
    return (value or DEFAULT_BASE_URL).rstrip("/")


def resolve_api_key(api_key: Optional[str] = None) -> Optional[str]:
    """`api_key=` first, then $SEQUENCES_API_KEY; None when neither is set."""
    return api_key if api_key is not None else (os.environ.get("SEQUENCES_API_KEY") or None)


def require_api_key(api_key: Optional[str] = None) -> str:
    """The key, or AuthError before any I/O."""
    key = resolve_api_key(api_key)
    if not key:
        raise AuthError(
            "no API key: set SEQUENCES_API_KEY or pass api_key= "
            f"(create one at {CONSOLE_URL})"
        )
    return key


def redact_key(key: Optional[str]) -> str:
    """`seq_live_…a1b2`: the first 9 and last 4 characters, never the middle."""
    if not key:
        return "MISSING"
    if len(key) <= 13:
        return key[:2] + "…"
    return f"{key[:9]}…{key[-4:]}"


def gateway_headers(api_key: Optional[str]) -> dict:
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def gateway_client(base_url: str, api_key: Optional[str], timeout_s: Optional[float] = 30.0) -> httpx.Client:
    """A client for the gateway; the key goes in its default headers and nowhere else."""
    return httpx.Client(
        base_url=base_url,
        headers=gateway_headers(api_key),
        timeout=timeout_s,
        limits=httpx.Limits(max_connections=None, max_keepalive_connections=4, keepalive_expiry=300.0),
    )


# Proxy settings httpx follows (any case); the lean telemetry client follows none.
_PROXY_VARIABLES = ("all_proxy", "http_proxy", "https_proxy")


def telemetry_client(base_url: str, api_key: Optional[str], timeout_s: Optional[float]) -> Any:
    """The telemetry sender's client. It posts every few seconds for as long as the robot runs,
    each time on cold caches, where the client's own `GatewayClient` costs about a quarter of
    httpx's CPU (~0.5 vs ~2 ms a post here). httpx stays when the environment names a proxy, which
    only httpx follows, or for a URL or key the lean client refuses."""
    if any(os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES):
        return gateway_client(base_url, api_key, timeout_s)
    from ._http11 import GatewayClient

    try:
        return GatewayClient(base_url, headers=gateway_headers(api_key), timeout=timeout_s)
    except ValueError:
        return gateway_client(base_url, api_key, timeout_s)


def _retry_after_header(headers: Mapping[str, str]) -> Optional[float]:
    value = headers.get("retry-after") if headers is not None else None
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None  # the HTTP-date form is not understood


def error_from_response(status: int, text: str, headers: Optional[Mapping[str, str]] = None) -> SequencesError:
    """Map a non-2xx answer to our exception tree (WIRE.md §3.3)."""
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


def parse_json_answer(response: httpx.Response) -> Any:
    """The JSON of a 2xx answer, or the mapped error. A 2xx that is not JSON is a SequencesError."""
    if response.status_code >= 300:
        raise error_from_response(response.status_code, response.text, response.headers)
    try:
        return response.json()
    except (ValueError, RecursionError):
        raise SequencesError(f"malformed JSON answer from {response.request.url.path}", response.status_code) from None


def gateway_call(
    method: str,
    base_url: str,
    path: str,
    *,
    api_key: Optional[str],
    json_body: Any = None,
    timeout_s: Optional[float] = 30.0,
    client: Optional[httpx.Client] = None,
) -> Any:
    """One gateway request; network failures become Unavailable without their cause (so the
    request and its Authorization header never land in a traceback)."""
    own = client is None
    http = client or gateway_client(base_url, api_key, timeout_s)
    try:
        try:
            response = http.request(method, path, json=json_body, timeout=timeout_s)
        except httpx.TimeoutException:
            if method.upper() == "POST":
                raise Unavailable(f"request timed out after {timeout_s}s") from None
            raise Unavailable(f"could not reach {base_url}: timed out") from None
        except httpx.HTTPError as exc:
            raise Unavailable(f"could not reach {base_url}: {exc}") from None
        return parse_json_answer(response)
    finally:
        if own:
            http.close()
