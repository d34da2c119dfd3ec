"""Runs the gateway (HTTP) and the worker (HTTPS) as two uvicorn servers on one asyncio loop,
and owns the worker's socket so it can be restarted with a new certificate, stopped and started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import tempfile
from typing import Any, Iterator, Optional

import uvicorn

from .asgi import quiet_dropped_responses
from .certs import WorkerCertificate, make_certificate
from .gateway import build_gateway_app
from .state import PlatformState, WorkerIdentity, new_direct_secret
from .worker import build_worker_app

log = logging.getLogger("sequence_ai.platform")


class _Server(uvicorn.Server):
    """A uvicorn server that leaves signals alone: the platform handles them once for both."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _listen(host: str, port: int) -> socket.socket:
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


class LocalServers:
    def __init__(self, state: PlatformState, host: str = "127.0.0.1", gateway_port: int = 0, worker_port: int = 0,
                 log_level: str = "warning"):
        self.state = state
        self.host = host
        self.gateway_port = gateway_port
        self.worker_port = worker_port
        self.log_level = log_level
        self._tmp = tempfile.TemporaryDirectory(prefix="sequences-local-")
        self._gateway: Optional[_Server] = None
        self._gateway_task: Optional[asyncio.Task] = None
        self._worker: Optional[_Server] = None
        self._worker_task: Optional[asyncio.Task] = None
        self._cert: Optional[WorkerCertificate] = None
        self._worker_app = build_worker_app(state)
        state.restart_worker = self.restart_worker
        state.set_worker_running = self.set_worker_running
        quiet_dropped_responses()

    @property
    def base_url(self) -> str:
        return f"http://{self._url_host}:{self.gateway_port}"

    @property
    def _url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host

    async def _serve(self, app: Any, sock: socket.socket, cert: Optional[WorkerCertificate]) -> tuple:
        config = uvicorn.Config(
            app, log_level=self.log_level, access_log=False, lifespan="off", timeout_graceful_shutdown=1,
            ssl_certfile=cert.certfile if cert else None, ssl_keyfile=cert.keyfile if cert else None,
        )
        server = _Server(config)
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started:
            if task.done():
                task.result()  # re-raise why it could not start
                raise RuntimeError("server exited during startup")
            await asyncio.sleep(0.005)
        return server, task

    async def start(self) -> None:
        gateway_sock = _listen(self.host, self.gateway_port)
        self.gateway_port = gateway_sock.getsockname()[1]
        await self._start_worker(new_identity=True)
        self._gateway, self._gateway_task = await self._serve(build_gateway_app(self.state), gateway_sock, None)

    async def _start_worker(self, new_identity: bool, previous: Optional[WorkerIdentity] = None) -> None:
        sock = _listen(self.host, self.worker_port)
        self.worker_port = sock.getsockname()[1]
        if new_identity or self._cert is None:
            self._cert = make_certificate(self._tmp.name, self.host)
        # The gateway hands out the new coordinates before the new worker answers (a client that
        # comes early waits in the listen backlog): never a moment in which the worker presents
        # a certificate that connect does not yet name.
        url = f"https://{self._url_host}:{self.worker_port}"
        previous = self.state.worker or previous
        if new_identity or previous is None:
            epoch = previous.epoch + 1 if previous else 1
            self.state.worker = WorkerIdentity(url, self._cert.fingerprint, new_direct_secret(), epoch)
        else:
            previous.url = url
        self._worker, self._worker_task = await self._serve(self._worker_app, sock, self._cert)

    async def _stop_worker(self) -> None:
        server, task = self._worker, self._worker_task
        if server is None or task is None:
            return
        # In-flight requests die with the worker, as they would on a real crash or redeploy.
        for connection in list(server.server_state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.close()
        server.should_exit = True
        server.force_exit = True
        await task
        self._worker = self._worker_task = None

    async def restart_worker(self, same_port: bool = True) -> WorkerIdentity:
        """New certificate, new secret, new epoch; the same port unless told otherwise. While it
        restarts, connect answers 503 (no worker): a client never gets the old identity for the
        new worker, nor the new one for the old."""
        previous, self.state.worker = self.state.worker, None
        await self._stop_worker()
        if not same_port:
            self.worker_port = 0
        await self._start_worker(new_identity=True, previous=previous)
        self.state.worker_down = False
        assert self.state.worker is not None
        return self.state.worker

    async def set_worker_running(self, running: bool) -> None:
        """worker_down closes the worker's port (connections refused); worker_up reopens it with
        the same identity, as a network outage rather than a redeploy would look."""
        if running and self._worker is None:
            await self._start_worker(new_identity=False)
        elif not running and self._worker is not None:
            await self._stop_worker()
        self.state.worker_down = not running

    async def stop(self) -> None:
        await self._stop_worker()
        if self._gateway is not None and self._gateway_task is not None:
            self._gateway.should_exit = True
            await self._gateway_task
        self._tmp.cleanup()
