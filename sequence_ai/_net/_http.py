"""Talking to the gateway: where it is, which key, its transports, and how an answer becomes a
value or an error (the mapping, docs/PROTOCOL.md §3, is `_status_errors.error_from_response`).
"""

from __future__ import annotations

import os
from typing import Any, Optional

from .._errors import AuthError, SequencesError, Unavailable
from .._version import __version__
from ._http11 import GatewayClient
from ._httpx_gateway import HttpxGateway, proxy_for
from ._mock import is_mock, key_for, local_platform
from ._status_errors import error_from_response
from ._transport import Answer, AnswerTooLarge, GatewayTransport, TransportError, TransportTimeout

__all__ = ["DEFAULT_BASE_URL", "error_from_response", "gateway_call", "gateway_client", "parse_json_answer",
           "require_api_key", "resolve_api_key", "resolve_base_url", "telemetry_client"]

DEFAULT_BASE_URL = "https://api.generalsequences.com"
CONSOLE_URL = "https://app.generalsequences.com/"
USER_AGENT = f"sequence-ai-python/{__version__}"


def resolve_base_url(base_url: Optional[str] = None) -> str:
    """`base_url=` first, then $SEQUENCES_BASE_URL, then the public gateway; no trailing slash.
    "mock" / "mock:…" is the local platform, started for this process (`_mock.py`)."""
    value = base_url if base_url is not None else os.environ.get("SEQUENCES_BASE_URL")
    if is_mock(value):
        return local_platform().base_url
    return (value or DEFAULT_BASE_URL).rstrip("/")


def resolve_api_key(api_key: Optional[str] = None, base_url: Optional[str] = None) -> Optional[str]:
    """`api_key=` first, then (for the mock tier's platform) its key, then $SEQUENCES_API_KEY;
    None when there is none. An empty `api_key=""` counts as not given (as in the reference
    client): the environment's key is used."""
    mock_key = None if api_key else key_for(base_url)
    if mock_key:
        return mock_key
    return api_key or os.environ.get("SEQUENCES_API_KEY") or None


def require_api_key(api_key: Optional[str] = None, base_url: Optional[str] = None) -> str:
    """The key, or AuthError before any I/O. `base_url` is the resolved gateway."""
    key = resolve_api_key(api_key, base_url)
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


def gateway_client(base_url: str, api_key: Optional[str], timeout_s: Optional[float] = 30.0) -> HttpxGateway:
    """The gateway's transport; the key goes in its default headers and nowhere else."""
    return HttpxGateway(base_url, gateway_headers(api_key), timeout_s)


def telemetry_client(base_url: str, api_key: Optional[str], timeout_s: Optional[float]) -> GatewayTransport:
    """The telemetry sender's transport. It posts every few seconds for as long as the robot runs,
    each time on cold caches, where the client's own `GatewayClient` costs about a quarter of
    httpx's CPU (~0.5 vs ~2 ms a post here). httpx stays when the environment names a proxy for
    the gateway, which only httpx follows, or for a URL or key the lean client refuses."""
    if proxy_for(base_url) is None:
        try:
            return GatewayClient(base_url, headers=gateway_headers(api_key), timeout=timeout_s)
        except ValueError:
            pass
    return gateway_client(base_url, api_key, timeout_s)


def parse_json_answer(answer: Answer, path: str) -> Any:
    """The JSON of a 2xx answer, or the mapped error. A 2xx that is not JSON is a SequencesError."""
    if answer.status_code >= 300:
        raise error_from_response(answer.status_code, answer.text, answer.headers)
    try:
        return answer.json()
    except (ValueError, RecursionError):
        raise SequencesError(f"malformed JSON answer from {path.split('?')[0]}", answer.status_code) from None


def gateway_call(
    method: str,
    base_url: str,
    path: str,
    *,
    api_key: Optional[str],
    json_body: Any = None,
    timeout_s: Optional[float] = 30.0,
    client: Optional[GatewayTransport] = None,
) -> Any:
    """One gateway request, `timeout_s` for all of it; network failures become Unavailable
    without their cause (so the request and its Authorization header never land in a traceback)."""
    own = client is None
    http = client or gateway_client(base_url, api_key, timeout_s)
    try:
        try:
            answer = http.request(method, path, json=json_body, timeout=timeout_s)
        except AnswerTooLarge as exc:
            raise SequencesError(f"refused the gateway's answer to {path.split('?')[0]}: {exc.message}") from None
        except TransportTimeout:
            if method.upper() == "POST":
                raise Unavailable(f"request timed out after {timeout_s}s") from None
            raise Unavailable(f"could not reach {base_url}: timed out") from None
        except TransportError as exc:
            raise Unavailable(f"could not reach {base_url}: {exc}") from None
        return parse_json_answer(answer, path)
    finally:
        if own:
            http.close()
