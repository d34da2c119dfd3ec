"""One websocket to a policy server that speaks first (openpi's `WebsocketPolicyServer`), every wait bounded.

    socket = PolicySocket("ws://gpu-box:8000", headers)
    metadata = socket.open(timeout_s)         # the handshake and the server's first frame
    answer = socket.exchange(frame, timeout_s)  # one binary frame out, one back

Such a server has no request ids: an answer that comes after its request was given up would be
read as the answer to the next one. So a receive that times out closes the socket, and the next
request opens a new one (which reads the metadata again). Frames are bounded (`max_frame_bytes`)
and at most one waits unread, so a server cannot make the client hold more than about two frames.
What goes wrong is one of the errors below, each a `SequencesError` the link above decides on:

    ServerNotUp      nothing listens at the address yet (a warming wait, with on_warming)
    ConnectionLost   the socket closed or broke without an error from the server (reconnect)
    ServerTimeout    no answer in time (the socket is dropped)
    ServerFailed     the server sent a text frame (its traceback) or closed with 1011
    FrameRefused     a frame over the size bound, or a text frame where the metadata belongs
    TlsRefused       wss:// whose certificate is not trusted (or not the host's), or a failed handshake:
                     raised before a byte of the request (or its key) is sent, and never retried

A wss:// server's certificate is checked as the gateway's is (`_http11.GatewayClient`): httpx's CA
bundle, or the CAs of $SSL_CERT_FILE / $SSL_CERT_DIR (how a private CA is trusted), and its host name.

Needs `websockets` (the [openpi] extra; its synchronous client, 13.0 or later). Why websockets and not
wsproto (bench/bench_websocket.py, one 0.3 MB DROID request and a small answer on loopback): per exchange
websockets took 0.28-0.29 ms of CPU and 0.72-0.74 ms round trip, a minimal wsproto client 0.97-1.04 ms
and 1.38-1.49 ms (two runs; ratios 0.28-0.29 and 0.48-0.54): wsproto masks the client's frame in Python,
websockets in C. Both are under 0.2 % of a 15 Hz period per action, so speed alone would not decide;
websockets also brings the bounded receive, TLS and the closing handshake that over wsproto would be our
own socket code.
"""

from __future__ import annotations

import ssl
import threading
import time
from typing import Any, Callable, Dict, Optional, Union

from .._errors import AuthError, SequencesError, Unavailable
from .._extras import install_hint

__all__ = ["Cancelled", "ConnectionLost", "FrameRefused", "PolicySocket", "ServerFailed", "ServerNotUp",
           "ServerTimeout", "TlsRefused"]

DEFAULT_MAX_FRAME_BYTES = 16 << 20  # an answer is a few kB; a request with two 224×224 views is ~0.3 MB
INTERNAL_ERROR = 1011
MESSAGE_TOO_BIG = 1009
RECEIVE_SLICE_S = 0.1  # how soon a receive notices that its request was abandoned


class ServerNotUp(Unavailable):
    """Nothing accepts connections at the address: a server still loading its checkpoint."""


class ConnectionLost(Unavailable):
    """The socket closed or broke without the server saying why."""


class ServerTimeout(Unavailable):
    """The server did not answer in time; the socket was dropped so a late answer is never read."""


class ServerFailed(SequencesError):
    """The policy raised on the server: `message` ends with the traceback's last line."""


class Cancelled(SequencesError):
    """The caller stopped waiting (an interrupt abandoned the request); the socket was dropped."""


class FrameRefused(SequencesError):
    """A frame the client will not read (too large, or text where the metadata belongs)."""


class TlsRefused(SequencesError):
    """The TLS handshake failed in a way a retry will not change; nothing was sent."""


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "(empty traceback)"


def _websockets() -> Any:
    try:
        from websockets.sync import client
    except ImportError:
        raise SequencesError(f"an openpi server (ws:// or wss://) needs a websocket client: {install_hint('openpi')}"
                             ) from None
    return client


def _queue_options(client: Any) -> Dict[str, Any]:
    """websockets 14+: no keepalive pings (every wait is bounded here; a server blocked in inference
    answers no ping) and at most one frame read ahead. 13 has neither option and reads one frame ahead."""
    import inspect

    parameters = inspect.signature(client.connect).parameters
    return {"ping_interval": None, "max_queue": 1} if "max_queue" in parameters else {}


class PolicySocket:
    def __init__(self, url: str, headers: Optional[Dict[str, str]] = None, *,
                 max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES):
        if not url.startswith(("ws://", "wss://")):
            raise SequencesError(f"not a websocket URL: {url!r} (ws://host:port or wss://host:port)")
        self.url = url
        self._headers = dict(headers or {})
        self.max_frame_bytes = max_frame_bytes
        self._lock = threading.Lock()
        self._conn: Any = None
        self._tls: Optional[ssl.SSLContext] = None  # made once: loading the CA bundle takes ~0.1 s
        self.opened = 0  # connections made over this socket's life (a reconnect adds one)

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def open(self, timeout_s: float) -> Any:
        """Connect (dropping any connection there was) and read the server's first frame, raw."""
        client = _websockets()
        from websockets import exceptions as ws_errors

        self.close()
        try:
            conn = client.connect(self.url, additional_headers=self._headers or None, compression=None,
                                  open_timeout=timeout_s, close_timeout=1.0, max_size=self.max_frame_bytes,
                                  **self._tls_option(), **_queue_options(client)).__enter__()  # closed by close()
        except ssl.SSLCertVerificationError as exc:
            raise TlsRefused(f"{self.url}: the server's TLS certificate was refused ({exc.verify_message}); nothing "
                             "was sent. To trust a private CA, set SSL_CERT_FILE to its PEM file") from None
        except ssl.SSLError as exc:  # EOF included: a plain ws:// server hangs up on a TLS hello
            raise TlsRefused(f"{self.url}: the TLS handshake failed ({exc.reason or exc}); does the server (or "
                             "a proxy in front of it) speak TLS there?") from None
        except ConnectionRefusedError:
            raise ServerNotUp(f"nothing accepts connections at {self.url} yet", 503, warming=True,
                              retry_after_s=1.0) from None
        except ws_errors.InvalidStatus as exc:
            status = getattr(getattr(exc, "response", None), "status_code", None)
            if status in (401, 403):
                raise AuthError(f"{self.url} refused the connection ({status}): check OPENPI_API_KEY", status) from None
            raise Unavailable(f"{self.url} refused the websocket ({status})", status) from None
        except TimeoutError:
            raise ServerTimeout(f"{self.url} did not complete the handshake within {timeout_s:g}s", 504) from None
        except (OSError, ws_errors.WebSocketException) as exc:
            raise ConnectionLost(f"could not reach {self.url}: {exc}", 503) from None
        with self._lock:
            self._conn = conn
            self.opened += 1
        metadata = self._receive(conn, timeout_s, "its metadata")
        if isinstance(metadata, str):
            self.close()
            raise FrameRefused(f"{self.url} sent text where its metadata belongs: {last_line(metadata)}")
        return metadata

    def _tls_option(self) -> Dict[str, Any]:
        if not self.url.startswith("wss://"):
            return {}
        if self._tls is None:
            import httpx

            self._tls = httpx.create_ssl_context()  # the gateway's trust: SSL_CERT_FILE / SSL_CERT_DIR honoured
        return {"ssl": self._tls}

    def exchange(self, frame: bytes, timeout_s: float, cancelled: Callable[[], bool] = lambda: False) -> bytes:
        """Send `frame`, return the answer frame; any failure leaves the socket closed. `cancelled()`
        is looked at every RECEIVE_SLICE_S: the caller gave up, so the socket is dropped (Cancelled)."""
        conn = self._conn
        if conn is None:
            raise ConnectionLost(f"no connection to {self.url}", 503)
        from websockets import exceptions as ws_errors

        try:
            conn.send(frame)
        except (ws_errors.ConnectionClosed, OSError) as exc:
            self.close()
            raise self._closed_error(exc, None) from None
        answer = self._receive(conn, timeout_s, "an answer", cancelled)
        if isinstance(answer, str):
            self._drain_close(conn)
            raise ServerFailed(f"the policy server failed: {last_line(answer)}", 500, answer)
        return answer

    def _receive(self, conn: Any, timeout_s: float, what: str,
                 cancelled: Callable[[], bool] = lambda: False) -> Union[bytes, str]:
        from websockets import exceptions as ws_errors

        deadline = time.monotonic() + timeout_s
        try:
            while True:
                try:  # a receive that times out leaves the frame unread: slicing the wait loses nothing
                    return conn.recv(timeout=max(0.0, min(RECEIVE_SLICE_S, deadline - time.monotonic())))
                except TimeoutError:
                    if cancelled():
                        self.close()
                        raise Cancelled(f"gave up waiting for {what}") from None
                    if time.monotonic() >= deadline:
                        raise
        except TimeoutError:
            self.close()
            raise ServerTimeout(f"{self.url} sent no {what.split()[-1]} within {timeout_s:.1f}s; the connection was "
                                "dropped so a late answer is never taken for the next one", 504) from None
        except (ws_errors.ConnectionClosed, OSError) as exc:
            self.close()
            raise self._closed_error(exc, what) from None

    def _closed_error(self, exc: Exception, what: Optional[str]) -> SequencesError:
        close = getattr(exc, "rcvd", None) or getattr(exc, "sent", None)
        code = getattr(close, "code", None)
        reason = getattr(close, "reason", "") or ""
        if code == MESSAGE_TOO_BIG:
            return FrameRefused(f"{self.url} sent a frame over the {self.max_frame_bytes}-byte bound; "
                                "the connection was closed")
        if code == INTERNAL_ERROR:
            return ServerFailed(f"the policy server failed (1011 {reason})".rstrip(), 500)
        waiting = f" while waiting for {what}" if what else ""
        return ConnectionLost(f"{self.url} closed the connection{waiting} ({code or 'no close frame'})", 503)

    def _drain_close(self, conn: Any) -> None:
        """After a traceback the server closes with 1011: wait a moment for it, then drop the socket."""
        try:
            conn.recv(timeout=1.0)
        except Exception:
            pass
        self.close()

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass
