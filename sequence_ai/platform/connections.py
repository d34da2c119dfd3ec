"""How long a caller may take to send a request, and how many connections may be open at once.

uvicorn's own keep-alive timer is cancelled by any byte that arrives, and nothing times out a
request head or body that trickles in, so a few hundred slow sockets ("slowloris") would hold a
server forever. `guarded_protocol()` makes uvicorn's h11 protocol with two rules added:

* each request head, and then its body, must arrive within `read_timeout_s` (the clock starts
  when the connection opens or the previous answer ends, and again when the head is complete;
  a trickle of bytes does not restart it); after that the connection is closed. Time the app
  spends answering is not counted (a slow model or an injected latency fault is not the caller's);
* at most `max_connections` are open at once; a connection beyond that is closed as soon as it
  is accepted, before anything is read from it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

DEFAULT_READ_TIMEOUT_S = 10.0
DEFAULT_MAX_CONNECTIONS = 256
_READING = (h11.IDLE, h11.SEND_BODY)  # the caller owes us bytes


def guarded_protocol(read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
                     max_connections: int = DEFAULT_MAX_CONNECTIONS) -> type:
    """An H11Protocol subclass enforcing both limits (pass it as uvicorn.Config(http=...))."""

    class GuardedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self._read_deadline: Optional[asyncio.TimerHandle] = None
            self._reading: Any = None  # (request cycle, h11 state) the deadline was set for

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if len(self.connections) >= max_connections:
                super().connection_made(transport)  # registered, so connection_lost finds it
                transport.close()
                return
            super().connection_made(transport)
            self._watch()

        def handle_events(self) -> None:
            super().handle_events()
            self._watch()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._watch()

        def connection_lost(self, exc: Optional[Exception]) -> None:
            self._cancel()
            super().connection_lost(exc)

        def _watch(self) -> None:
            """(Re)start the deadline whenever the caller starts owing a new part of a request."""
            state = self.conn.their_state
            if state not in _READING or self.transport is None or self.transport.is_closing():
                self._cancel()
                self._reading = None
                return
            reading = (self.cycle, state)
            if reading != self._reading:
                self._reading = reading
                self._cancel()
                self._read_deadline = self.loop.call_later(read_timeout_s, self._too_slow)

        def _cancel(self) -> None:
            if self._read_deadline is not None:
                self._read_deadline.cancel()
                self._read_deadline = None

        def _too_slow(self) -> None:
            self._read_deadline = None
            if self.transport is not None and not self.transport.is_closing():
                self.transport.close()

    return GuardedH11Protocol
