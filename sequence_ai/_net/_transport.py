"""The transport seam: what the worker connection and the gateway calls need of an HTTP client,
the answer that comes back, and the errors a transport raises.

Two transports implement it for each server: `_http11.PinnedClient` (the worker, pinned TLS) and,
for the gateway, `_httpx_gateway.HttpxGateway` (its calls) and `_http11.GatewayClient` (telemetry).
Whatever a transport is built on, it keeps these promises:

* `timeout` is the deadline of the **whole request** — connect, TLS handshake, sending, and
  every byte of the answer — not of one read: a server that trickles its answer a byte at a time
  is cut off when the time is up (`TransportTimeout`).
* Answers are capped (`_limits.py`): a body, a header block or a line above the caps, or more
  interim `1xx` answers than the cap, is `AnswerTooLarge`; nothing larger is ever buffered.
* The secret the transport sends (its `Authorization: Bearer` token) is cut out of everything it
  hands up: the answer's body and header values, and its own error messages (`_redact.py`).
* Failures are the `TransportError` classes below, never another library's exceptions.

Tests pass a transport of their own (the worker connection takes a factory; the gateway calls take
a `GatewayTransport`) instead of patching one in.
"""

from __future__ import annotations

import json as _json
from typing import Any, Callable, Dict, Mapping, Optional, Protocol

from .._errors import Unavailable
from ._status_errors import error_from_response

__all__ = [
    "Answer",
    "AnswerTooLarge",
    "ConnectFailed",
    "ConnectionLost",
    "GatewayTransport",
    "Headers",
    "TransportClosed",
    "TransportError",
    "TransportTimeout",
    "WorkerTransport",
    "WorkerTransportFactory",
    "compact_json",
]


class TransportError(Unavailable):
    """A request that got no usable answer. The worker connection reconnects and replays on
    these; anywhere else they are an `Unavailable` without a status."""


class ConnectFailed(TransportError):
    """No connection: refused, unreachable, or the TLS handshake failed."""


class TransportTimeout(TransportError):
    """The request's whole deadline passed before its answer was complete."""


class ConnectionLost(TransportError):
    """The connection broke during the request, or what came back is not an HTTP answer."""


class AnswerTooLarge(ConnectionLost):
    """An answer, a header block or a line above the caps, or endless interim answers."""


class TransportClosed(TransportError):
    """A request on a transport that was closed (another thread replaced or shut it)."""


class Headers(Dict[str, str]):
    """Header names lower-cased; `get`, `[]` and `in` are case-insensitive."""

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())


class Answer:
    """Status, headers and body of one answer, already capped and redacted."""

    __slots__ = ("content", "headers", "status_code")

    def __init__(self, status_code: int, headers: Headers, content: bytes):
        self.status_code = status_code
        self.headers = headers
        self.content = content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return _json.loads(self.content)

    def raise_for_status(self) -> Answer:
        """Self for a 2xx, otherwise the mapped SequencesError (docs/PROTOCOL.md §3.3)."""
        if not 200 <= self.status_code < 300:
            raise error_from_response(self.status_code, self.text, self.headers)
        return self


class WorkerTransport(Protocol):
    """Kept-alive requests to one worker, every connection pinned to its certificate."""

    def post(self, path: str, *, json: Any = None, content: Optional[bytes] = None,
             headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> Answer: ...

    def retire(self) -> None:
        """Take no new request (TransportClosed); close idle connections now and the others as
        their requests end (a link replaced by a reconnect: requests on it may still finish)."""

    def close(self) -> None:
        """Close every connection, also those a request is using now (it fails at once)."""


# (worker_url, certificate pin, headers, default timeout_s) -> a transport; CertPinError for a
# URL that is not https or a pin that is not a SHA-256, before any socket is opened.
WorkerTransportFactory = Callable[[str, str, Mapping[str, str], Optional[float]], WorkerTransport]


class GatewayTransport(Protocol):
    """Requests to the gateway; the API key, if any, is in the transport's own headers."""

    def request(self, method: str, path: str, *, json: Any = None, timeout: Optional[float] = None) -> Answer: ...

    def post(self, path: str, *, json: Any = None, timeout: Optional[float] = None) -> Answer: ...

    def close(self) -> None: ...


# The encoder json.dumps(ensure_ascii=False, separators=(",", ":"), allow_nan=False) makes for
# every call, made once (it keeps no state between calls: each encode() has its own).
_COMPACT = _json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def compact_json(value: Any) -> bytes:
    """JSON as it goes on the wire: compact, UTF-8, no NaN/inf (ValueError)."""
    return _COMPACT.encode(value).encode("utf-8")
