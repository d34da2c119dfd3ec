"""Serving an app on a socket of our own (uvicorn with the connection guard of connections.py),
and `WorkerServer`, which owns the worker's socket so it can be restarted with a new certificate,
stopped and started. The gateway is served in the platform's main process, the worker in a
process of its own (worker_process.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import socket
import tempfile
from dataclasses import dataclass
from typing import Any, Iterator, List, Optional, Tuple

import uvicorn

from .asgi import quiet_dropped_responses
from .certs import WorkerCertificate, make_certificate
from .connections import DEFAULT_MAX_CONNECTIONS, DEFAULT_READ_TIMEOUT_S, guarded_protocol
from .state import PlatformState, WorkerIdentity, new_direct_secret
from .worker import build_worker_app

log = logging.getLogger("sequence_ai.platform")


@dataclass(frozen=True)
class ServeLimits:
    """What one caller may cost a server: time to send a request, and open connections."""

    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S
    max_connections: int = DEFAULT_MAX_CONNECTIONS


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signals alone (the platform handles them) and bounds the TLS
    handshake by the read timeout (uvicorn leaves asyncio's 60 s default)."""

    handshake_timeout_s: Optional[float] = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: Optional[List[socket.socket]] = None) -> None:
        loop = asyncio.get_running_loop()
        if self.config.ssl is None or self.handshake_timeout_s is None:
            await super().startup(sockets=sockets)
            return
        # uvicorn calls loop.create_server without a handshake timeout; give it ours for this call.
        loop.create_server = functools.partial(loop.create_server,  # type: ignore[method-assign]
                                               ssl_handshake_timeout=self.handshake_timeout_s)
        try:
            await super().startup(sockets=sockets)
        finally:
            del loop.create_server  # the loop's own method again


def listen(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    # A restarted worker takes its old port back while old connections sit in TIME_WAIT.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted sockets inherit this: without it, a response written in two pieces (headers, body)
    # waits on the peer's delayed ACK, ~40 ms per request.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


async def serve(app: Any, sock: socket.socket, cert: Optional[WorkerCertificate], log_level: str,
                limits: ServeLimits) -> Tuple[_Server, asyncio.Task]:
    """Start serving `app` on `sock` (TLS with `cert`); returns once it accepts connections."""
    config = uvicorn.Config(
        app, log_level=log_level, access_log=False, lifespan="off", timeout_graceful_shutdown=1,
        ssl_certfile=cert.certfile if cert else None, ssl_keyfile=cert.keyfile if cert else None,
        http=guarded_protocol(limits.read_timeout_s, limits.max_connections),
    )
    server = _Server(config)
    server.handshake_timeout_s = limits.read_timeout_s
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()  # re-raise why it could not start
            raise RuntimeError("server exited during startup")
        await asyncio.sleep(0.005)
    return server, task


async def shut(server: _Server, task: asyncio.Task, *, kill_connections: bool) -> None:
    if kill_connections:  # in-flight requests die, as they would on a real crash or redeploy
        for connection in list(server.server_state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.close()
        server.force_exit = True
    server.should_exit = True
    await task


class WorkerServer:
    """The worker's socket, certificate and identity, in the worker's process."""

    def __init__(self, state: PlatformState, host: str, port: int, log_level: str, limits: ServeLimits):
        self.state = state
        self.host = host
        self.port = port
        self.log_level = log_level
        self.limits = limits
        self._tmp = tempfile.TemporaryDirectory(prefix="sequences-local-")
        self._app = build_worker_app(state)
        self._cert: Optional[WorkerCertificate] = None
        self._sock: Optional[socket.socket] = None  # listening, not served yet (a restart in two steps)
        self._server: Optional[Tuple[_Server, asyncio.Task]] = None
        quiet_dropped_responses()

    async def start(self) -> WorkerIdentity:
        identity = self.prepare(new_identity=True)
        await self.serve_prepared()
        return identity

    def prepare(self, new_identity: bool) -> WorkerIdentity:
        """Listen (clients that come early wait in the backlog) and settle the identity the
        gateway must name before this worker serves: never a moment in which the worker presents
        a certificate that connect does not yet name."""
        self._sock = listen(self.host, self.port)
        self.port = self._sock.getsockname()[1]
        if new_identity or self._cert is None:
            self._cert = make_certificate(self._tmp.name, self.host)
        url = f"https://{url_host(self.host)}:{self.port}"
        previous = self.state.worker
        if new_identity or previous is None:
            self.state.worker = WorkerIdentity(url, self._cert.fingerprint, new_direct_secret(),
                                               previous.epoch + 1 if previous else 1)
        else:
            previous.url = url
        return self.state.worker

    async def serve_prepared(self) -> None:
        if self._sock is not None:
            self._server = await serve(self._app, self._sock, self._cert, self.log_level, self.limits)
            self._sock = None

    async def stop(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            await shut(*server, kill_connections=True)

    async def prepare_restart(self, same_port: bool = True) -> WorkerIdentity:
        """New certificate, new secret, new epoch; the same port unless told otherwise. The new
        worker serves after `serve_prepared()`, once the gateway names it."""
        await self.stop()
        if not same_port:
            self.port = 0
        identity = self.prepare(new_identity=True)
        self.state.worker_down = False
        return identity

    async def set_running(self, running: bool) -> None:
        """Down closes the port (connections refused); up reopens it with the same identity, as a
        network outage rather than a redeploy would look."""
        if running and self._server is None:
            self.prepare(new_identity=False)
            await self.serve_prepared()
        elif not running and self._server is not None:
            await self.stop()
        self.state.worker_down = not running

    async def close(self) -> None:
        await self.stop()
        if self._sock is not None:
            self._sock.close()
        self._tmp.cleanup()
