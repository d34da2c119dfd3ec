"""The client's own HTTP/1.1: kept-alive connections, nothing else (WIRE.md §4.6, §5, §6.2).

Two kinds of requests run while a robot moves: `/act` to the worker once per chunk, from a refill
thread that has slept for most of a chunk, and the telemetry batch to the gateway every few
seconds, from a thread that has slept even longer. Both run on cold caches, where a
general-purpose client's layers (httpx: ~2 ms of CPU per cold request here) cost more than the
robot's whole control step. This client writes the request in one `sendall` and parses the answer
by hand (~0.7 ms cold for an `/act`, `bench/bench_underruns.py`; ~0.5 ms for a telemetry post).

- `PinnedClient`: the worker, `https://host:port` only, every connection pinned to a certificate
  fingerprint. The pin is checked right after every TLS handshake, before any byte of a request is
  written; a mismatch raises CertPinError and the socket is closed.
- `GatewayClient`: the gateway's telemetry ingest, `http://` or `https://` with httpx's own
  certificate trust and hostname check. Proxies are not followed: `telemetry_client` in `_http`
  keeps httpx when the environment names one.

What it supports is what the two servers speak: `POST`/`GET` with a JSON or empty body, answers
with `Content-Length`, `Transfer-Encoding: chunked` or read-until-close, `Connection: close`.
Network failures are raised as httpx's exception types (`ConnectError`, `ReadTimeout`,
`RemoteProtocolError`, …) so the reconnect logic treats both clients alike; a request on a closed
client raises RuntimeError, as httpx does.
"""

from __future__ import annotations

import hmac
import json
import re
import select
import socket
import ssl
import threading
from typing import Any, Dict, List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

import httpx

from ._errors import CertPinError
from ._tls import certificate_fingerprint
from ._version import __version__

__all__ = ["GatewayClient", "PinnedClient", "WorkerResponse", "compact_json"]

_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"[ -~]*")
_HEX = re.compile(r"[0-9A-Fa-f]+")
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_IDLE = 4
_RECV = 64 * 1024  # under malloc's mmap threshold: no map and unmap syscalls per read


class WorkerResponse:
    """Status, headers (lower-case names) and body of one answer."""

    __slots__ = ("content", "headers", "status_code")

    def __init__(self, status_code: int, headers: _Headers, content: bytes):
        self.status_code = status_code
        self.headers = headers
        self.content = content

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)

    def raise_for_status(self) -> WorkerResponse:
        """Self for a 2xx, otherwise the mapped SequencesError (WIRE.md §3.3)."""
        if not 200 <= self.status_code < 300:
            from ._http import error_from_response

            raise error_from_response(self.status_code, self.text, self.headers)
        return self


class _Headers(Dict[str, str]):
    """Header names lower-cased; `get` is case-insensitive like httpx's."""

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())


class _Connection:
    """One socket (TLS or plain), the bytes read past the last answer, and who is at the other
    end (for messages: "the worker", "the gateway")."""

    __slots__ = ("peer", "pending", "received", "sock")

    def __init__(self, sock: socket.socket, peer: str):
        self.sock = sock
        self.peer = peer
        self.pending = b""
        self.received = 0  # bytes read for the request in progress

    def reusable(self) -> bool:
        """An idle kept-alive socket is fit for the next request unless the server closed it (or
        sent something unasked): then it reads as ready."""
        if self.pending or (isinstance(self.sock, ssl.SSLSocket) and self.sock.pending()):
            return False
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return False
        return not readable

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class _KeptAliveClient:
    """A small pool of kept-alive connections to one server; a subclass opens them (`_connect`)."""

    peer = "the server"
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
        self._idle: List[_Connection] = []
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

    def _take(self, timeout: Optional[float]) -> Tuple[_Connection, bool]:
        """A connection for the next request, and whether it is a kept-alive one."""
        with self._lock:
            if self._closed:
                raise RuntimeError("Cannot send a request, as the client has been closed.")
            while self._idle:
                connection = self._idle.pop()
                if connection.reusable():
                    return connection, True
                connection.close()
        return self._connect(timeout), False

    def _give_back(self, connection: _Connection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < MAX_IDLE:
                self._idle.append(connection)
                return
        connection.close()

    def _connect(self, timeout: Optional[float]) -> _Connection:
        raise NotImplementedError

    def _open_tcp(self, timeout: Optional[float]) -> socket.socket:
        try:
            raw = socket.create_connection((self._host, self._port), timeout=timeout)
        except socket.timeout:
            raise httpx.ConnectTimeout(f"timed out connecting to {self.peer}") from None
        except OSError as exc:
            raise httpx.ConnectError(f"could not connect to {self.peer}: {exc.strerror or exc}") from None
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        return raw

    def _handshake(self, raw: socket.socket, context: ssl.SSLContext,
                   server_hostname: Optional[str] = None) -> ssl.SSLSocket:
        try:
            return context.wrap_socket(raw, server_hostname=server_hostname)
        except socket.timeout:
            raw.close()
            raise httpx.ConnectTimeout(f"timed out in the TLS handshake with {self.peer}") from None
        except (OSError, ssl.SSLError) as exc:
            raw.close()
            raise httpx.ConnectError(f"TLS handshake with {self.peer} failed: {exc}") from None

    def close(self) -> None:
        with self._lock:
            self._closed, idle, self._idle = True, self._idle, []
        for connection in idle:
            connection.close()

    def __enter__(self) -> _KeptAliveClient:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- requests --------------------------------------------------------------------------

    def post(self, path: str, *, json: Any = None, content: Optional[bytes] = None,
             headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> WorkerResponse:
        return self.request("POST", path, json=json, content=content, headers=headers, timeout=timeout)

    def get(self, path: str, *, headers: Optional[Mapping[str, str]] = None,
            timeout: Optional[float] = None) -> WorkerResponse:
        return self.request("GET", path, headers=headers, timeout=timeout)

    def request(self, method: str, path: str, *, json: Any = None, content: Optional[bytes] = None,
                headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> WorkerResponse:
        """`content`: a JSON body already encoded (compact, UTF-8), sent as is; otherwise `json`."""
        if content is not None:
            body = content
        else:
            body = b"" if json is None else compact_json(json)
        sized = content is not None or json is not None or method in ("POST", "PUT", "PATCH")
        head = self.head(method, path, headers, body if sized else None)
        timeout = self._timeout if timeout is None else timeout
        connection, kept = self._take(timeout)
        try:
            return self._exchange(connection, method, head, body, timeout)
        except (httpx.WriteError, httpx.ReadError, httpx.RemoteProtocolError):
            if not (kept and self.replays_stale and connection.received == 0):
                raise
        return self._exchange(self._connect(timeout), method, head, body, timeout)

    def _exchange(self, connection: _Connection, method: str, head: bytes, body: bytes,
                  timeout: Optional[float]) -> WorkerResponse:
        connection.received = 0
        try:
            connection.sock.settimeout(timeout)
            try:
                connection.sock.sendall(head + body if len(body) < 65536 else head)
                if len(body) >= 65536:
                    connection.sock.sendall(body)
            except socket.timeout:
                raise httpx.WriteTimeout(f"timed out sending to {self.peer}") from None
            except (OSError, ssl.SSLError) as exc:
                raise httpx.WriteError(f"sending to {self.peer} failed: {exc}") from None
            response, keep = _read_response(connection, method)
        except BaseException:
            connection.close()
            raise
        if keep:
            self._give_back(connection)
        else:
            connection.close()
        return response


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

    def _connect(self, timeout: Optional[float]) -> _Connection:
        sock = self._handshake(self._open_tcp(timeout), self._context)
        der = sock.getpeercert(True)
        if not der or not hmac.compare_digest(certificate_fingerprint(der), self._pin):
            sock.close()
            raise CertPinError("worker certificate does not match the pinned fingerprint")
        return _Connection(sock, self.peer)


class GatewayClient(_KeptAliveClient):
    """Kept-alive connections to the gateway, `http://` or `https://`: for https, the certificate
    is verified the way httpx verifies it (its CA bundle, SSL_CERT_FILE / SSL_CERT_DIR) and must
    name the host."""

    peer = "the gateway"
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

    def _connect(self, timeout: Optional[float]) -> _Connection:
        raw = self._open_tcp(timeout)
        sock = raw if self._context is None else self._handshake(raw, self._context, server_hostname=self._host)
        return _Connection(sock, self.peer)


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


def compact_json(value: Any) -> bytes:
    """JSON as it goes on the wire: compact, UTF-8, no NaN/inf (ValueError)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _recv(connection: _Connection) -> bytes:
    try:
        data = connection.sock.recv(_RECV)
        connection.received += len(data)
        return data
    except socket.timeout:
        raise httpx.ReadTimeout(f"timed out waiting for {connection.peer}") from None
    except (OSError, ssl.SSLError) as exc:
        raise httpx.ReadError(f"reading from {connection.peer} failed: {exc}") from None


def _read_response(connection: _Connection, method: str) -> Tuple[WorkerResponse, bool]:
    """One answer off the connection (interim 1xx answers skipped), and whether it stays open."""
    buffer = bytearray(connection.pending)
    connection.pending = b""
    while True:
        end = buffer.find(b"\r\n\r\n")
        while end < 0:
            if len(buffer) > MAX_HEADER_BYTES:
                raise httpx.RemoteProtocolError(f"{connection.peer}'s answer headers are too large")
            data = _recv(connection)
            if not data:
                raise httpx.RemoteProtocolError(f"{connection.peer} disconnected without sending an answer")
            buffer += data
            end = buffer.find(b"\r\n\r\n")
        status, version, headers = _parse_head(bytes(buffer[:end]), connection.peer)
        del buffer[:end + 4]
        if 100 <= status < 200 and status != 101:
            continue
        break
    closing = version == "HTTP/1.0" or "close" in headers.get("connection", "").lower()
    if method == "HEAD" or status in (204, 304):
        body, to_close = b"", False
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        body, to_close = _read_chunked(connection, buffer), False
    elif "content-length" in headers:
        text = headers["content-length"]
        if not re.fullmatch(r"[0-9]{1,18}", text):
            raise httpx.RemoteProtocolError(f"{connection.peer} sent a malformed Content-Length")
        length = int(text)
        if length < 0 or length > MAX_BODY_BYTES:
            raise httpx.RemoteProtocolError(f"{connection.peer}'s answer length {length} is out of bounds")
        while len(buffer) < length:
            data = _recv(connection)
            if not data:
                raise httpx.RemoteProtocolError(f"{connection.peer} disconnected in the middle of an answer")
            buffer += data
        body = bytes(buffer[:length])
        del buffer[:length]
        to_close = False
    else:  # neither: the body runs until the server closes
        while True:
            data = _recv(connection)
            if not data:
                break
            buffer += data
            if len(buffer) > MAX_BODY_BYTES:
                raise httpx.RemoteProtocolError(f"{connection.peer}'s answer is too large")
        body, to_close = bytes(buffer), True
        buffer = bytearray()
    connection.pending = bytes(buffer)
    return WorkerResponse(status, headers, body), not (closing or to_close)


def _parse_head(head: bytes, peer: str) -> Tuple[int, str, _Headers]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not re.fullmatch(r"[1-5][0-9][0-9]", parts[1]):
        raise httpx.RemoteProtocolError(f"{peer}'s answer has no valid status line")
    headers = _Headers()
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise httpx.RemoteProtocolError(f"{peer} sent a malformed header line")
        key = name.lower()
        value = value.strip()
        headers[key] = f"{dict.__getitem__(headers, key)}, {value}" if dict.__contains__(headers, key) else value
    return int(parts[1]), parts[0], headers


def _take_line(connection: _Connection, buffer: bytearray, where: str) -> bytes:
    """The next CRLF-terminated line off `buffer` (reading more as needed), without the CRLF."""
    end = buffer.find(b"\r\n")
    while end < 0:
        data = _recv(connection)
        if not data:
            raise httpx.RemoteProtocolError(f"{connection.peer} disconnected {where}")
        buffer += data
        end = buffer.find(b"\r\n")
    line = bytes(buffer[:end])
    del buffer[:end + 2]
    return line


def _read_chunked(connection: _Connection, buffer: bytearray) -> bytes:
    body = bytearray()
    while True:
        size_text = _take_line(connection, buffer, "in the middle of a chunked answer")
        size_text = size_text.split(b";", 1)[0].strip().decode("latin-1")
        if not _HEX.fullmatch(size_text) or len(size_text) > 16:
            raise httpx.RemoteProtocolError(f"{connection.peer} sent a malformed chunk size")
        size = int(size_text, 16)
        if size == 0:
            while _take_line(connection, buffer, "in a chunked answer's trailer"):
                pass  # trailers, up to the blank line
            return bytes(body)
        if len(body) + size > MAX_BODY_BYTES:
            raise httpx.RemoteProtocolError(f"{connection.peer}'s answer is too large")
        while len(buffer) < size + 2:
            data = _recv(connection)
            if not data:
                raise httpx.RemoteProtocolError(f"{connection.peer} disconnected in the middle of a chunked answer")
            buffer += data
        body += buffer[:size]
        del buffer[:size + 2]
