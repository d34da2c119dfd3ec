"""A hostile upstream on loopback: a plain-HTTP gateway and a TLS worker (with a real certificate
that the client pins) that answer the way a broken or malicious service might — a byte at a time,
without end, far too large, echoing the request back, or with numbers that contradict the model.

Both are real sockets served by threads of this process. By default they behave: the gateway serves
the local platform's catalogue, readiness, admission (pointing at the worker, with its real pin)
and the telemetry ingest; the worker answers every `/act` with a valid pi05-droid chunk (8 steps,
8 wide, 15 Hz). A test replaces the answer of one path with `on(path, reply, after=n)`; replies are
written by the helpers below (`send`, `trickle`, `endless`, `echo`).

    with HostileUpstream(tmp_path) as up:
        up.worker.on("/act", trickle(chunk_answer()), after=1)
        policy = connect(MODEL, api_key=up.api_key, base_url=up.base_url, timeout_s=2.0)
"""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from _tls_cert import self_signed

from sequence_ai.platform import catalogue

MODEL = "pi05-droid"
CHUNKED_HEAD = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
API_KEY = "seq_test_hostile_key_7f3a9c1e5b2d4f60"
DIRECT_SECRET = "dsk_hostile_secret_0c9e8d7b6a5f4e3d"


class Request:
    def __init__(self, method: str, path: str, head: bytes, body: bytes):
        self.method, self.path, self.head, self.body = method, path, head, body
        self.headers = {}
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            self.headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")


class Wire:
    """One accepted connection, as a reply sees it."""

    def __init__(self, sock: socket.socket, stop: threading.Event):
        self.sock, self.stop = sock, stop
        self.sent = 0
        self.open = True

    def send(self, data: bytes) -> bool:
        """False once the client went away (or the server is closing)."""
        if self.stop.is_set():
            self.open = False
        if not self.open:
            return False
        try:
            self.sock.sendall(data)
            self.sent += len(data)
            return True
        except (OSError, ssl.SSLError):
            self.open = False
            return False


Reply = Callable[[Request, Wire], None]


def answer(body: Any, status: str = "200 OK", headers: str = "") -> bytes:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n{headers}\r\n"
            ).encode() + data


def chunk_answer(rows: int = 8, width: int = 8, value: float = 0.01, **fields: Any) -> bytes:
    """A well-formed /act answer for pi05-droid; `fields` override the action_chunk's fields."""
    chunk = {"steps": [[value] * width for _ in range(rows)], "robot": "droid_franka",
             "action_space": "joint_delta", "action_dim": width, "control_frequency_hz": 15.0,
             "covers_seconds": rows / 15.0, "open_loop_horizon": rows}
    chunk.update(fields)
    return answer({"action_chunk": chunk, "id": "hostile", "perf": {"handler_ms": 1.0}})


def send(data: bytes) -> Reply:
    return lambda request, wire: wire.send(data)


def trickle(data: bytes, every_s: float = 0.2, size: int = 1) -> Reply:
    """`data` a few bytes at a time: each read the client makes gets something, well inside any
    per-read timeout, and the whole takes len(data) / size * every_s seconds."""

    def reply(request: Request, wire: Wire) -> None:
        for start in range(0, len(data), size):
            if not wire.send(data[start:start + size]):
                return
            if wire.stop.wait(every_s):
                return

    return reply


def endless(prefix: bytes, piece: bytes, every_s: float = 0.0) -> Reply:
    """`prefix`, then `piece` again and again until the client hangs up."""

    def reply(request: Request, wire: Wire) -> None:
        if not wire.send(prefix):
            return
        batch = piece * max(1, 65536 // len(piece)) if every_s == 0 else piece
        while wire.send(batch):
            if every_s and wire.stop.wait(every_s):
                return

    return reply


def echo(status: str = "500 Internal Server Error", as_json: bool = True) -> Reply:
    """An error page that echoes the request it was sent — headers included."""

    def reply(request: Request, wire: Wire) -> None:
        text = request.head.decode("latin-1")
        wire.send(answer({"detail": f"could not handle: {text}"} if as_json else text.encode(), status))

    return reply


class _Server:
    def __init__(self, context: Optional[ssl.SSLContext], routes: Dict[str, Reply]):
        self._context = context
        self._default = routes
        self._override: Dict[str, Tuple[Reply, int]] = {}
        self.seen: List[Request] = []
        self.wires: List[Wire] = []
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def on(self, path: str, reply: Reply, after: int = 0) -> None:
        """Answer `path` with `reply` from its (after+1)-th request on."""
        with self._lock:
            done = sum(1 for r in self.seen if r.path == path)
            self._override[path] = (reply, done + after)

    def reset(self) -> None:
        """Every path back to its default answer."""
        with self._lock:
            self._override.clear()

    def count(self, path: str) -> int:
        with self._lock:
            return sum(1 for r in self.seen if r.path == path)

    def _route(self, request: Request) -> Reply:
        with self._lock:
            number = sum(1 for r in self.seen if r.path == request.path)
            self.seen.append(request)
            reply, start = self._override.get(request.path, (None, 0))
        if reply is not None and number >= start:
            return reply
        return self._default.get(request.path) or send(answer({"detail": "not found"}, "404 Not Found"))

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                raw, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            sock = self._context.wrap_socket(raw, server_side=True) if self._context else raw
        except (OSError, ssl.SSLError):
            raw.close()
            return
        wire = Wire(sock, self.stop)
        self.wires.append(wire)
        buffer = b""
        try:
            while wire.open and not self.stop.is_set():
                while b"\r\n\r\n" not in buffer:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                request_line = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
                request = Request(request_line[0], request_line[1].split("?")[0], head, b"")
                length = int(request.headers.get("content-length") or 0)
                while len(buffer) < length:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffer += data
                request.body, buffer = buffer[:length], buffer[length:]
                self._route(request)(request, wire)
        except (OSError, ssl.SSLError, ValueError, IndexError):
            return
        finally:
            try:
                sock.close()
            except OSError:
                pass

    def close(self) -> None:
        self.stop.set()
        self._listener.close()
        for wire in list(self.wires):
            try:
                wire.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class HostileUpstream:
    """The gateway (`base_url`) and its worker; `env()` for a node process."""

    api_key = API_KEY
    direct_secret = DIRECT_SECRET

    def __init__(self, tmp_path, action: Optional[Dict[str, Any]] = None):
        cert, key, self.fingerprint = self_signed(tmp_path)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.worker = _Server(context, {"/act": send(chunk_answer()), "/act/episode_end": send(answer({"ok": True}))})
        self.worker_url = f"https://127.0.0.1:{self.worker.port}"
        row = next(r for r in catalogue.rows("act") if r["id"].endswith("/" + MODEL))
        self.declared = {"robot": row["robot"], "action_space": row["action_space"], "action_dim": row["action_dim"],
                         "control_frequency_hz": row["control_hz"]} if action is None else action
        declared = dict(self.declared)
        self.grant = {"worker_url": self.worker_url, "cert_fingerprint": self.fingerprint,
                      "direct_secret": DIRECT_SECRET, "lease": {"ttl_s": 300.0, "epoch": 1}, "action": declared}
        self.gateway = _Server(None, {
            "/v1/models": send(answer({"object": "list", "data": catalogue.rows()})),
            "/v1/act/ready": send(answer({"ready": True, "eta_s": 0, "status": "running"})),
            "/v1/act/connect": lambda request, wire: wire.send(answer(self.grant)),
            "/v1/reports/act": send(answer({"accepted": True})),
        })
        self.base_url = f"http://127.0.0.1:{self.gateway.port}"

    def env(self) -> Dict[str, str]:
        return {"SEQUENCES_BASE_URL": self.base_url, "SEQUENCES_API_KEY": API_KEY}

    def close(self) -> None:
        self.gateway.close()
        self.worker.close()

    def __enter__(self) -> HostileUpstream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def finishes_within(seconds: float, fn: Callable[[], Any]) -> Tuple[bool, Any]:
    """(finished, result or exception) of `fn` run on a thread for at most `seconds`: a call that
    wedges fails the test instead of hanging it."""
    box: Dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # the caller inspects it
            box["value"] = exc

    thread = threading.Thread(target=run, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(seconds)
    box["elapsed"] = time.monotonic() - started
    return not thread.is_alive(), box.get("value")
