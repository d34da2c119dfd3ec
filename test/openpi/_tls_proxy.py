"""A TLS-terminating proxy on 127.0.0.1 in front of a plain ws:// server: what a user puts before an openpi
server to serve wss:// (the server itself speaks no TLS). asyncio + ssl on a thread of its own.

It counts what a test judges: TCP connections, completed TLS handshakes (and why any failed), and the
decrypted bytes a client sent through it, so a test can tell that nothing crossed a refused handshake.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from pathlib import Path
from typing import List, Optional

PIPE_CHUNK = 1 << 16


class TlsProxy:
    def __init__(self, upstream_port: int, certfile: Path, keyfile: Path):
        self.upstream_port = upstream_port
        self._context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._context.load_cert_chain(str(certfile), str(keyfile))
        self.port = 0
        self.connections = 0
        self.handshakes = 0
        self.handshake_errors: List[str] = []
        self.from_client = bytearray()  # every decrypted byte a client sent, in order
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._thread: Optional[threading.Thread] = None
        self._started = threading.Event()
        self._stop: Optional[asyncio.Event] = None

    def url(self, host: str = "127.0.0.1") -> str:
        return f"wss://{host}:{self.port}"

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, record: bool) -> None:
        try:
            while data := await reader.read(PIPE_CHUNK):
                if record:
                    self.from_client += data
                writer.write(data)
                await writer.drain()
        except (ConnectionError, ssl.SSLError):
            pass
        finally:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:  # plain TCP first, then TLS: a failed handshake is seen here, with its reason
            await writer.start_tls(self._context)
        except (ssl.SSLError, ConnectionError, OSError) as exc:
            self.handshake_errors.append(str(exc))
            writer.close()
            return
        self.handshakes += 1
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:
            writer.close()
            return
        await asyncio.gather(self._pipe(reader, up_writer, True), self._pipe(up_reader, writer, False))

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._started.set()
        async with server:
            await self._stop.wait()
        piping = asyncio.all_tasks() - {asyncio.current_task()}
        for task in piping:
            task.cancel()
        await asyncio.gather(*piping, return_exceptions=True)

    def __enter__(self) -> TlsProxy:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(),), daemon=True)
        self._thread.start()
        if not self._started.wait(30.0):
            raise RuntimeError("the TLS proxy did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._loop is not None and self._thread is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30.0)
