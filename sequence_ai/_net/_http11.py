"""The client's own HTTP/1.1: kept-alive connections, nothing else (docs/PROTOCOL.md §4.6, §5, §6.2).

Two kinds of requests run while a robot moves: `/act` to the worker once per chunk and the
telemetry batch to the gateway every few seconds. This client keeps what httpx alone does not
(docs/CLIENT-LOOP.md, "Why the worker keeps its own client", measured by
`bench/bench_worker_http.py`): `close()` ends a request in progress on another thread at once,
`retire()` lets it finish while refusing new ones, and an answer past a cap is refused as such,
not taken for a dropped connection and retried. It writes the request in one `sendall` and parses
the answer by hand (`_http11_answer.py`), at under half httpx's CPU per cold request.

- `PinnedClient` (a `WorkerTransport`): the worker, `https://host:port` only, every connection
  pinned to a certificate fingerprint. The pin is checked right after every TLS handshake, before
  any byte of a request is written; a mismatch raises CertPinError and the socket is closed.
- `GatewayClient` (a `GatewayTransport`): the gateway's telemetry ingest, `http://` or `https://`
  with httpx's own certificate trust and hostname check. Proxies are not followed:
  `telemetry_client` in `_http` uses httpx when the environment names one.

Both keep the seam's promises (`_transport.py`): `timeout` bounds the whole request, answers are
capped, the sent secret is cut out of what comes back, failures are transport errors; `close()`
also ends requests in progress on other threads.
"""

from __future__ import annotations

import hmac
import re
import socket
import ssl
import threading
import time
from typing import Any, List, Mapping, Optional, Set, Tuple
from urllib.parse import urlsplit

import httpx

from .._errors import CertPinError
from .._version import __version__
from ._http11_answer import Connection, read_answer, time_left
from ._limits import GATEWAY_ANSWER_LIMIT_BYTES, WORKER_ANSWER_LIMIT_BYTES
from ._redact import Redactor, bearer_secret
from ._tls import certificate_fingerprint, normalise_fingerprint
from ._transport import (
    Answer,
    ConnectFailed,
    ConnectionLost,
    Headers,
    TransportClosed,
    TransportTimeout,
    compact_json,
)

__all__ = ["GatewayClient", "PinnedClient", "pinned_client"]

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"[ -~]*")
MAX_IDLE = 4
_SEND = 64 * 1024  # a large body goes in slices, each with the time left as its timeout


class _KeptAliveClient:
    """A small pool of kept-alive connections to one server; a subclass opens them (`_connect`)."""

    peer = "the server"
    answer_limit = WORKER_ANSWER_LIMIT_BYTES
    # Send a request again, once, on a new connection when a kept-alive one fails before a byte
    # of the answer arrived: the server closed it as the request went out (its idle timeout).
    # Off for the worker, whose /act calls have their own replay rules (_worker.py).
    replays_stale = False

    def __init__(self, host: str, port: int, netloc: str, prefix: str, *, headers: Optional[Mapping[str, str]],
                 timeout: Optional[float]):
        self._host = host
        self._port = port
        self._prefix = prefix.rstrip("/")
        self._timeout = timeout
        base = {"Host": netloc, "User-Agent": f"sequence-ai-python/{__version__}",
                "Accept": "application/json", "Accept-Encoding": "identity"}
        base.update(headers or {})
        _check_headers(base)  # once: head() checks only what each request adds
        self._headers = base
        self._redactor = Redactor([bearer_secret(base)])
        self._idle: List[Connection] = []
        self._busy: Set[Connection] = set()
        self._lock = threading.Lock()
        self._closed = False

    # -- the pool --------------------------------------------------------------------------

    def head(self, method: str, path: str, headers: Optional[Mapping[str, str]], body: Optional[bytes]) -> bytes:
        """The request line and headers, ASCII; ValueError (never quoting a value, which may be
        the secret) for a header that is not one line of visible ASCII."""
        merged = dict(self._headers)
        if headers:
            _check_headers(headers)
            merged.update(headers)
        if body is not None:
            merged["Content-Length"] = str(len(body))
            if body:
                merged["Content-Type"] = "application/json"
        lines = [f"{method} {self._prefix}{path} HTTP/1.1", *(f"{name}: {value}" for name, value in merged.items())]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("ascii")

    def _take(self, deadline: Optional[float]) -> Tuple[Connection, bool]:
        """A connection for the next request, and whether it is a kept-alive one."""
        with self._lock:
            self._refuse_if_closed()
            while self._idle:
                connection = self._idle.pop()
                if connection.reusable():
                    self._busy.add(connection)
                    return connection, True
                connection.close()
        return self._open(deadline), False

    def _open(self, deadline: Optional[float]) -> Connection:
        connection = self._connect(deadline)
        with self._lock:
            if self._closed:
                connection.close()
                self._refuse_if_closed()
            self._busy.add(connection)
        return connection

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise TransportClosed(f"the client for {self.peer} has been closed")

    def _give_back(self, connection: Connection, keep: bool) -> None:
        with self._lock:
            self._busy.discard(connection)
            if keep and not self._closed and len(self._idle) < MAX_IDLE:
                self._idle.append(connection)
                return
        connection.close()

    def _connect(self, deadline: Optional[float]) -> Connection:
        raise NotImplementedError

    def _open_tcp(self, deadline: Optional[float]) -> socket.socket:
        try:
            raw = socket.create_connection((self._host, self._port), timeout=time_left(deadline, self.peer))
        except socket.timeout:
            raise TransportTimeout(f"timed out connecting to {self.peer}") from None
        except OSError as exc:
            raise ConnectFailed(f"could not connect to {self.peer}: {exc.strerror or exc}") from None
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        return raw

    def _handshake(self, raw: socket.socket, context: ssl.SSLContext, deadline: Optional[float],
                   server_hostname: Optional[str] = None) -> ssl.SSLSocket:
        try:
            raw.settimeout(time_left(deadline, self.peer))
            return context.wrap_socket(raw, server_hostname=server_hostname)
        except socket.timeout:
            raw.close()
            raise TransportTimeout(f"timed out in the TLS handshake with {self.peer}") from None
        except (OSError, ssl.SSLError) as exc:
            raw.close()
            raise ConnectFailed(f"TLS handshake with {self.peer} failed: {exc}") from None
        except TransportTimeout:
            raw.close()
            raise

    def retire(self) -> None:
        """No new requests; idle connections close now, busy ones when their request ends."""
        with self._lock:
            self._closed, idle, self._idle = True, self._idle, []
        for connection in idle:
            connection.close()

    def close(self) -> None:
        """Close every connection; a request in progress on another thread fails at once."""
        self.retire()
        with self._lock:
            busy, self._busy = self._busy, set()
        for connection in busy:
            connection.shutdown()

    def __enter__(self) -> _KeptAliveClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- requests --------------------------------------------------------------------------

    def post(self, path: str, *, json: Any = None, content: Optional[bytes] = None,
             headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> Answer:
        return self.request("POST", path, json=json, content=content, headers=headers, timeout=timeout)

    def get(self, path: str, *, headers: Optional[Mapping[str, str]] = None,
            timeout: Optional[float] = None) -> Answer:
        return self.request("GET", path, headers=headers, timeout=timeout)

    def request(self, method: str, path: str, *, json: Any = None, content: Optional[bytes] = None,
                headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> Answer:
        """`content`: a JSON body already encoded (compact, UTF-8), sent as is; otherwise `json`.
        `timeout`: seconds for the whole request (default: the client's)."""
        if content is not None:
            body = content
        else:
            body = b"" if json is None else compact_json(json)
        sized = content is not None or json is not None or method in ("POST", "PUT", "PATCH")
        head = self.head(method, path, headers, body if sized else None)
        timeout = self._timeout if timeout is None else timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        connection, kept = self._take(deadline)
        try:
            return self._exchange(connection, method, head, body, deadline)
        except ConnectionLost:
            if not (kept and self.replays_stale and connection.received == 0):
                raise
        return self._exchange(self._open(deadline), method, head, body, deadline)

    def _exchange(self, connection: Connection, method: str, head: bytes, body: bytes,
                  deadline: Optional[float]) -> Answer:
        connection.received = 0
        connection.deadline = deadline
        try:
            self._send(connection, head + body if len(body) < _SEND else head)
            for start in range(0, len(body) if len(body) >= _SEND else 0, _SEND):
                self._send(connection, body[start:start + _SEND])
            answer, keep = read_answer(connection, method, self.answer_limit)
        except BaseException:
            self._give_back(connection, keep=False)
            if connection.shut:
                raise TransportClosed(f"the client for {self.peer} was closed during the request") from None
            raise
        self._give_back(connection, keep)
        return self._redacted(answer) if self._redactor else answer

    def _send(self, connection: Connection, data: bytes) -> None:
        try:
            left = connection.time_left()
            if left is not None:
                connection.sock.settimeout(left)
            connection.sock.sendall(data)
        except socket.timeout:
            raise TransportTimeout(f"timed out sending to {self.peer}") from None
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise ConnectionLost(f"sending to {self.peer} failed: {exc}") from None

    def _redacted(self, answer: Answer) -> Answer:
        redact = self._redactor
        headers = Headers({name: redact.text(value) for name, value in answer.headers.items()})
        return Answer(answer.status_code, headers, redact.data(answer.content))


class PinnedClient(_KeptAliveClient):
    """Kept-alive connections to one `https://host:port` worker, each pinned to a certificate
    fingerprint (64 lower-case hex characters, already normalised)."""

    peer = "the worker"

    def __init__(self, base_url: str, pin: str, *, headers: Optional[Mapping[str, str]] = None,
                 timeout: Optional[float] = 30.0, context: Optional[ssl.SSLContext] = None):
        parts = _split(base_url)
        if parts is None or parts[0] != "https":
            raise CertPinError("the worker URL is not https://host:port; refusing to connect unpinned")
        _, host, port, netloc, prefix = parts
        super().__init__(host, port or 443, netloc, prefix, headers=headers, timeout=timeout)
        self._pin = pin
        self._context = context or _pinning_context()

    def _connect(self, deadline: Optional[float]) -> Connection:
        sock = self._handshake(self._open_tcp(deadline), self._context, deadline)
        der = sock.getpeercert(True)
        if not der or not hmac.compare_digest(certificate_fingerprint(der), self._pin):
            sock.close()
            raise CertPinError("worker certificate does not match the pinned fingerprint")
        return Connection(sock, self.peer)


def pinned_client(base_url: str, fingerprint: str, headers: Mapping[str, str],
                  timeout: Optional[float]) -> PinnedClient:
    """The default `WorkerTransportFactory`: a client whose every connection is TLS pinned to
    `fingerprint` (validated first, before any socket is opened). Never follows proxies."""
    return PinnedClient(base_url, normalise_fingerprint(fingerprint), headers=headers, timeout=timeout)


class GatewayClient(_KeptAliveClient):
    """Kept-alive connections to the gateway, `http://` or `https://`: for https, the certificate
    is verified the way httpx verifies it (its CA bundle, SSL_CERT_FILE / SSL_CERT_DIR) and must
    name the host."""

    peer = "the gateway"
    answer_limit = GATEWAY_ANSWER_LIMIT_BYTES
    replays_stale = True  # telemetry posts: a report sent twice beats a batch lost

    def __init__(self, base_url: str, *, headers: Optional[Mapping[str, str]] = None,
                 timeout: Optional[float] = 10.0, context: Optional[ssl.SSLContext] = None):
        parts = _split(base_url)
        if parts is None or parts[0] not in ("http", "https"):
            raise ValueError(f"the gateway URL {base_url!r} is not http(s)://host[:port]")
        scheme, host, port, netloc, prefix = parts
        super().__init__(host, port or (443 if scheme == "https" else 80), netloc, prefix, headers=headers,
                         timeout=timeout)
        self._context = (context or httpx.create_ssl_context()) if scheme == "https" else None

    def _connect(self, deadline: Optional[float]) -> Connection:
        raw = self._open_tcp(deadline)
        if self._context is None:
            return Connection(raw, self.peer)
        return Connection(self._handshake(raw, self._context, deadline, server_hostname=self._host), self.peer)


def _split(base_url: str) -> Optional[Tuple[str, str, Optional[int], str, str]]:
    """(scheme, host, port, netloc, path prefix) of an absolute URL, or None."""
    try:
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError:
        return None
    if not parts.hostname:
        return None
    return parts.scheme.lower(), parts.hostname, port, parts.netloc, parts.path


def _check_headers(headers: Mapping[str, str]) -> None:
    for name, value in headers.items():
        if not _HEADER_NAME.fullmatch(name) or not _HEADER_VALUE.fullmatch(value):
            # never quote the value: it may be the secret
            raise ValueError(f"header {name!r} is not a single line of visible ASCII")


def _pinning_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False  # a bare IP with a self-signed certificate: the pin is the trust
    context.verify_mode = ssl.CERT_NONE
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context
