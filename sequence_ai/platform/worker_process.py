"""The worker in a process of its own, and the gateway's line to it.

On one event loop with the gateway, a slow gateway route delayed every /act: four large depth
requests pushed the worker's answers past a second, and even on separate threads the gateway's
JSON and base64 work held the GIL for hundreds of milliseconds. So the worker runs in a child
process, forked before any event loop or thread exists. It owns its socket, certificate and
secret, the faults of its routes (act, episode_end, ping), its request log, statistics and
episodes. The gateway keeps everything else and asks the worker for the rest over a pipe, one
call at a time (`WorkerLink`); the admin API is the only caller.

The child ignores SIGINT (a Ctrl-C reaches the whole process group; the parent stops it in
order) and exits when the pipe closes, so a gateway killed with SIGKILL takes its worker along.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import signal
from dataclasses import dataclass
from typing import Any, Dict, Optional

from .state import ColdStart, PlatformState, WorkerIdentity

WORKER_ROUTES = frozenset({"act", "episode_end", "ping"})
READY_TIMEOUT_S = 30.0


class WorkerGone(RuntimeError):
    """The worker process exited or stopped answering."""


@dataclass(frozen=True)
class WorkerSettings:
    host: str
    port: int
    log_level: str
    policy: Optional[str]  # --policy MOD:FN, or None for the stand-ins
    read_timeout_s: float
    max_connections: int


def start_worker_process(settings: WorkerSettings) -> WorkerLink:
    """Fork the worker (call before any event loop or thread starts; spawn where fork is missing)."""
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    ours, theirs = context.Pipe()
    process = context.Process(target=_child_main, args=(theirs, ours, settings), name="sequences-worker", daemon=True)
    process.start()
    theirs.close()
    return WorkerLink(process, ours)


class WorkerLink:
    """The gateway's side: typed calls to the worker process."""

    def __init__(self, process: Any, conn: Any):
        self.process = process
        self._conn = conn
        self._lock: Optional[asyncio.Lock] = None

    async def _receive(self, timeout_s: float) -> Any:
        loop = asyncio.get_running_loop()
        readable = loop.create_future()
        fd = self._conn.fileno()
        loop.add_reader(fd, lambda: readable.done() or readable.set_result(None))
        try:
            await asyncio.wait_for(readable, timeout_s)
        except asyncio.TimeoutError:
            raise WorkerGone(f"the worker process did not answer within {timeout_s:g}s") from None
        finally:
            loop.remove_reader(fd)
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            raise WorkerGone("the worker process exited") from None

    async def ready(self) -> WorkerIdentity:
        kind, value = await self._receive(READY_TIMEOUT_S)
        if kind != "ready":
            raise WorkerGone(f"the worker process could not start: {value}")
        return value

    async def call(self, op: str, timeout_s: float = 60.0, **kwargs: Any) -> Any:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            try:
                self._conn.send((op, kwargs))
            except (BrokenPipeError, OSError):
                raise WorkerGone("the worker process exited") from None
            kind, value = await self._receive(timeout_s)
        if kind == "value-error":
            raise ValueError(value)
        if kind != "ok":
            raise WorkerGone(f"the worker process failed {op}: {value}")
        return value

    async def close(self, timeout_s: float = 10.0) -> None:
        try:
            await self.call("stop", timeout_s=timeout_s)
        except WorkerGone:
            pass
        await asyncio.get_running_loop().run_in_executor(None, self.process.join, timeout_s)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self._conn.close()


# -- the worker's side ----------------------------------------------------------------------------
def _child_main(conn: Any, parents_end: Any, settings: WorkerSettings) -> None:
    parents_end.close()  # a forked copy of it would keep the pipe open after the gateway dies
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    asyncio.run(_serve_worker(conn, settings))


async def _serve_worker(conn: Any, settings: WorkerSettings) -> None:
    from . import policies
    from .plugin import load_policy
    from .server import ServeLimits, WorkerServer

    server = None
    try:
        policy = load_policy(settings.policy) if settings.policy else policies.stand_in
        state = PlatformState(None, "", policy, settings.policy or "stand-in")
        server = WorkerServer(state, settings.host, settings.port, settings.log_level,
                              ServeLimits(settings.read_timeout_s, settings.max_connections))
        identity = await server.start()
    except Exception as err:  # the parent reports it and exits
        if server is not None:
            await server.close()
        conn.send(("failed", f"{type(err).__name__}: {err}"))
        return
    conn.send(("ready", identity))
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue = asyncio.Queue()

    def readable() -> None:
        try:
            inbox.put_nowait(conn.recv())
        except (EOFError, OSError):  # the gateway is gone
            loop.remove_reader(conn.fileno())
            inbox.put_nowait(("stop", {}))

    loop.add_reader(conn.fileno(), readable)
    try:
        while True:
            op, kwargs = await inbox.get()
            if op == "stop":
                await server.close()
                _reply(conn, ("ok", None))
                return
            try:
                _reply(conn, ("ok", await _OPS[op](state, server, **kwargs)))
            except ValueError as err:
                _reply(conn, ("value-error", str(err)))
            except Exception as err:
                _reply(conn, ("error", f"{type(err).__name__}: {err}"))
    finally:
        await server.close()


def _reply(conn: Any, message: Any) -> None:
    try:
        conn.send(message)
    except (BrokenPipeError, OSError):
        pass


async def _arm(state: PlatformState, server: Any, **spec: Any) -> Dict[str, Any]:
    return state.faults.arm(spec.pop("kind"), **spec).as_dict()


async def _cold(state: PlatformState, server: Any, cold: Optional[ColdStart]) -> None:
    state.cold_start = cold


async def _rotate(state: PlatformState, server: Any) -> WorkerIdentity:
    return state.rotate_secret()


async def _restart(state: PlatformState, server: Any, same_port: bool) -> WorkerIdentity:
    return await server.prepare_restart(same_port)


async def _serve(state: PlatformState, server: Any) -> None:
    await server.serve_prepared()


async def _running(state: PlatformState, server: Any, running: bool) -> None:
    await server.set_running(running)


async def _requests(state: PlatformState, server: Any, limit: int) -> list:
    return list(state.act_log)[-limit:]


async def _faults(state: PlatformState, server: Any) -> list:
    return state.faults.listing()


async def _clear(state: PlatformState, server: Any, kind: Optional[str]) -> int:
    return state.faults.clear(kind)


async def _stats(state: PlatformState, server: Any) -> dict:
    return state.stats


async def _arrivals(state: PlatformState, server: Any) -> dict:
    return state.arrivals


async def _reset(state: PlatformState, server: Any) -> None:
    state.reset()
    await server.set_running(True)


_OPS = {"arm_fault": _arm, "cold": _cold, "rotate_secret": _rotate, "restart": _restart, "serve": _serve,
        "running": _running, "requests": _requests, "faults": _faults, "clear_faults": _clear, "stats": _stats,
        "arrivals": _arrivals, "reset": _reset}
