"""The gateway over httpx, with what the seam promises and httpx lacks (`_transport.py`).

httpx's timeouts are per read, so a gateway that trickles its answer never times out, and it
buffers whatever length the gateway announces. `HttpxGateway` gives httpx a transport of ours —
httpx's own seam, on httpcore's public API — whose sockets take the time left of the request in
progress as every timeout (so a call ends by its deadline however the answer is dribbled), that
refuses an answer above the cap as it streams in, and that raises our transport errors. Proxies
from the environment (`HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`, …) are followed, as httpx does.
Header blocks and lines are capped by h11, which httpcore runs with a 100 KiB limit; interim
`1xx` answers are bounded by the deadline only.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from typing import Any, Iterator, Optional

import httpcore
import httpx

from ._httpcore_api import NetworkBackend, NetworkStream, SyncBackend, connect_options
from ._limits import GATEWAY_ANSWER_LIMIT_BYTES
from ._redact import Redactor, bearer_secret, redact_library_logs
from ._transport import (
    Answer,
    AnswerTooLarge,
    ConnectFailed,
    ConnectionLost,
    Headers,
    TransportClosed,
    TransportError,
    TransportTimeout,
)

__all__ = ["HttpxGateway", "proxy_for"]

_deadline = threading.local()  # .at: time.monotonic() by which this thread's request must be done


def _time_left(timeout: Optional[float]) -> Optional[float]:
    end = getattr(_deadline, "at", None)
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise httpcore.ReadTimeout("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _Stream(NetworkStream):
    """A socket whose every operation ends by the request's deadline."""

    def __init__(self, inner: NetworkStream):
        self._inner = inner

    def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
        return self._inner.read(max_bytes, _time_left(timeout))

    def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
        self._inner.write(buffer, _time_left(timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: Optional[str] = None,
                  timeout: Optional[float] = None) -> NetworkStream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _time_left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend(NetworkBackend):
    def __init__(self) -> None:
        self._inner = SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: Optional[float] = None, local_address: Optional[str] = None,
                    socket_options: Any = None) -> NetworkStream:
        return _Stream(self._inner.connect_tcp(host, port, _time_left(timeout), local_address,
                                               **connect_options(socket_options)))

    def connect_unix_socket(self, path: str, timeout: Optional[float] = None,
                            socket_options: Any = None) -> NetworkStream:  # pragma: no cover - unused
        return _Stream(self._inner.connect_unix_socket(path, _time_left(timeout), **connect_options(socket_options)))

    def sleep(self, seconds: float) -> None:  # pragma: no cover - retries are off
        time.sleep(seconds)


def _mapped(exc: Exception) -> TransportError:
    if isinstance(exc, httpcore.TimeoutException):
        return TransportTimeout("the gateway did not answer in time")
    if isinstance(exc, (httpcore.ConnectError, httpcore.ProxyError, httpcore.UnsupportedProtocol)):
        return ConnectFailed(f"could not connect: {exc}")
    return ConnectionLost(f"the connection broke: {exc}")


class _CappedBody(httpx.SyncByteStream):
    def __init__(self, stream: Any, limit: int):
        self._stream, self._limit = stream, limit

    def __iter__(self) -> Iterator[bytes]:
        total = 0
        try:
            for piece in self._stream:
                total += len(piece)
                if total > self._limit:
                    raise AnswerTooLarge(f"the gateway's answer is above the {self._limit}-byte cap")
                yield piece
        except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError) as exc:
            raise _mapped(exc) from None

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


def _core_url(url: httpx.URL) -> httpcore.URL:
    return httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path)


def proxy_for(base_url: str) -> Optional[str]:
    """The proxy the environment names for `base_url`, or None (direct, or NO_PROXY matches)."""
    proxies = urllib.request.getproxies_environment()
    url = httpx.URL(base_url)
    if not url.host or urllib.request.proxy_bypass_environment(url.host, proxies):
        return None
    return proxies.get(url.scheme) or proxies.get("all") or None


class _DeadlineTransport(httpx.BaseTransport):
    def __init__(self, proxy: Optional[str], limit: int):
        self._limit = limit
        pool = dict(ssl_context=httpx.create_ssl_context(), max_connections=None, max_keepalive_connections=4,
                    keepalive_expiry=300.0, network_backend=_Backend())
        if proxy is None:
            self._pool: Any = httpcore.ConnectionPool(**pool)
            return
        via = httpx.Proxy(proxy)
        if via.url.scheme in ("http", "https"):
            # TLS to an https:// proxy uses httpcore's default trust (every httpcore has it; the
            # proxy_ssl_context of 1.x is not in 0.14)
            self._pool = httpcore.HTTPProxy(proxy_url=_core_url(via.url), proxy_auth=via.raw_auth,
                                            proxy_headers=via.headers.raw, **pool)
        else:  # socks5: needs socksio, as with httpx (`pip install httpx[socks]`)
            self._pool = httpcore.SOCKSProxy(proxy_url=_core_url(via.url), proxy_auth=via.raw_auth, **pool)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core = httpcore.Request(method=request.method, url=_core_url(request.url), headers=request.headers.raw,
                                content=request.stream, extensions=request.extensions)
        try:
            answer = self._pool.handle_request(core)
        except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError, httpcore.ProxyError,
                httpcore.UnsupportedProtocol) as exc:
            raise _mapped(exc) from None
        # We ask for identity: an encoded body is left as it came (so nothing inflates past the cap).
        headers = [(name, value) for name, value in answer.headers if name.lower() != b"content-encoding"]
        length = next((value for name, value in headers if name.lower() == b"content-length"), b"")
        if length.isdigit() and int(length) > self._limit:
            answer.close()
            raise AnswerTooLarge(f"the gateway's answer is {int(length)} bytes, above the {self._limit}-byte cap")
        return httpx.Response(status_code=answer.status, headers=headers,
                              stream=_CappedBody(answer.stream, self._limit), extensions=answer.extensions)

    def close(self) -> None:
        self._pool.close()


class HttpxGateway:
    """A `GatewayTransport` on httpx: kept-alive, proxies followed, the key in its headers."""

    peer = "the gateway"

    def __init__(self, base_url: str, headers: dict, timeout: Optional[float] = 30.0,
                 limit: int = GATEWAY_ANSWER_LIMIT_BYTES):
        headers = {**headers, "Accept-Encoding": "identity"}
        self._timeout = timeout
        self._redactor = Redactor([bearer_secret(headers)])
        redact_library_logs(self._redactor)
        self._client = httpx.Client(base_url=base_url, headers=headers, timeout=timeout,
                                    transport=_DeadlineTransport(proxy_for(base_url), limit))

    def request(self, method: str, path: str, *, json: Any = None, timeout: Optional[float] = None) -> Answer:
        """One request; `timeout` (default: the client's) bounds all of it."""
        timeout = self._timeout if timeout is None else timeout
        _deadline.at = None if timeout is None else time.monotonic() + timeout
        try:
            response = self._client.request(method, path, json=json, timeout=timeout)
        except TransportError as exc:
            raise type(exc)(self._redactor.text(exc.message)) from None
        except httpx.HTTPError as exc:  # httpx's own refusals (a URL it cannot use, a closed client)
            raise ConnectFailed(self._redactor.text(f"could not send the request: {exc}")) from None
        except RuntimeError:  # httpx refuses requests on a closed client with RuntimeError
            raise TransportClosed("the client for the gateway has been closed") from None
        finally:
            _deadline.at = None
        redact = self._redactor.text
        headers = Headers({name.lower(): redact(value) for name, value in response.headers.items()})
        return Answer(response.status_code, headers, self._redactor.data(response.content))

    def post(self, path: str, *, json: Any = None, timeout: Optional[float] = None) -> Answer:
        return self.request("POST", path, json=json, timeout=timeout)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HttpxGateway:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
