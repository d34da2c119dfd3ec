"""The worker's `/act` path on the client's own HTTP/1.1 (`_net._http11.PinnedClient`) against httpx
alone (an httpx client given only what httpx 0.22.0 takes: pinned in the TLS handshake, every socket
operation bounded by the request's deadline, the answer streamed and capped). It decides whether
the worker keeps the hand-written client (docs/CLIENT-LOOP.md, "Why the worker keeps its own client").

1. CPU per request, on cold caches: the local platform in a subprocess; per client a
   `WorkerConnection` on that transport sends one pi05-droid `/act` (two 224×224 JPEG views) to
   warm up, then `--requests` more, each after a `--gap` s sleep (a refill thread sleeps most of a
   chunk), timing the calling thread's CPU (`time.thread_time()`) over `act()`. Clients alternate
   within a round and the order flips each round. Per action: the request's cost over the
   chunk's 8 actions (pi05-droid plays 8 of 15 rows per request at 15 Hz). `--layer post` times
   the transport's `post` alone (admitted by our own gateway client), which also runs on httpx
   0.22.0, where the gateway's httpx client does not yet.
2. The hardening, against a hostile worker on loopback (test/reliability/_hostile.py): an answer
   trickled a byte every 0.2 s (1 s deadline), bodies and header blocks without end, a chunk-size
   line without end, `close()` from another thread during a request, and a certificate that does
   not match the pin. Each row names what the client raised and when.

    scripts/workspace.sh run python bench/bench_worker_http.py [--requests 30] [--gap 0.5] [--rounds 3]
        [--layer act|post] [--skip-hardening | --only-hardening]
    PYTHONPATH=<a venv's site-packages with httpx==0.22.0> scripts/workspace.sh run python \
        bench/bench_worker_http.py --layer post      # the same on Ubuntu 22.04's httpx
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import ssl
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common
import httpx
from bench_worker import camera_frame

from sequence_ai import CertPinError
from sequence_ai._net._http11 import pinned_client
from sequence_ai._net._limits import WORKER_ANSWER_LIMIT_BYTES
from sequence_ai._net._redact import Redactor, bearer_secret
from sequence_ai._net._tls import normalise_fingerprint
from sequence_ai._net._transport import (
    Answer,
    AnswerTooLarge,
    ConnectFailed,
    ConnectionLost,
    Headers,
    TransportClosed,
    TransportTimeout,
)

HZ, ACTIONS_PER_REQUEST = 15.0, 8  # pi05-droid: control_hz, open_loop_horizon

# As in sequence_ai/_net/_httpx_gateway.py, which is not imported here: it needs a newer httpcore than 0.14.
_deadline = threading.local()  # .at: time.monotonic() by which this thread's request must be done


def _left(timeout: Optional[float]) -> Optional[float]:
    end = getattr(_deadline, "at", None)
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise TimeoutError("the request's deadline passed")  # socket.timeout: httpcore maps it
    return left if timeout is None else min(timeout, left)


class _PinnedSocket(ssl.SSLSocket):
    """A TLS socket that checks the pin as its handshake ends, before a byte of a request, and
    whose every timeout is what is left of the request (httpcore sets one before each operation)."""

    pin = ""

    def do_handshake(self, block: bool = False) -> None:
        self.settimeout(self.gettimeout())
        super().do_handshake(block)
        der = self.getpeercert(True)
        if not der or not hmac.compare_digest(hashlib.sha256(der).hexdigest(), self.pin):
            self.close()
            raise CertPinError("worker certificate does not match the pinned fingerprint")

    def settimeout(self, value: Optional[float]) -> None:
        super().settimeout(_left(value))


class HttpxPinned:
    """A `WorkerTransport` on httpx alone (API of 0.22.0). `retire()` closes at once here, and
    `close()` does not wake a request blocked on another thread: two promises it does not keep."""

    def __init__(self, base_url: str, pin: str, headers: Mapping[str, str], timeout: Optional[float]):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.sslsocket_class = type("Pinned", (_PinnedSocket,), {"pin": normalise_fingerprint(pin)})
        self._timeout = timeout
        self._redactor = Redactor([bearer_secret(headers)])
        self._client = httpx.Client(base_url=base_url, headers={**headers, "Accept-Encoding": "identity"},
                                    verify=context, trust_env=False, timeout=timeout,
                                    limits=httpx.Limits(max_keepalive_connections=4))

    def post(self, path: str, *, json: Any = None, content: Optional[bytes] = None,
             headers: Optional[Mapping[str, str]] = None, timeout: Optional[float] = None) -> Answer:
        timeout = self._timeout if timeout is None else timeout
        _deadline.at = None if timeout is None else time.monotonic() + timeout
        try:
            with self._client.stream("POST", path, json=json, content=content, headers=headers,
                                     timeout=timeout) as response:
                length = response.headers.get("content-length", "")
                if length.isdigit() and int(length) > WORKER_ANSWER_LIMIT_BYTES:
                    raise AnswerTooLarge(f"the worker's answer is {length} bytes, above the cap")
                body = bytearray()
                for piece in response.iter_raw():
                    body += piece
                    if len(body) > WORKER_ANSWER_LIMIT_BYTES:
                        raise AnswerTooLarge("the worker's answer is above the cap")
        except httpx.TimeoutException:
            raise TransportTimeout("the worker did not answer in time") from None
        except httpx.ConnectError as exc:
            raise ConnectFailed(self._redactor.text(f"could not connect to the worker: {exc}")) from None
        except httpx.TransportError as exc:
            raise ConnectionLost(self._redactor.text(f"the connection broke: {exc}")) from None
        except RuntimeError:
            raise TransportClosed("the client for the worker has been closed") from None
        finally:
            _deadline.at = None
        redact = self._redactor.text
        answer_headers = Headers({name.lower(): redact(value) for name, value in response.headers.items()})
        return Answer(response.status_code, answer_headers, self._redactor.data(bytes(body)))

    def retire(self) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()


CLIENTS: Dict[str, Callable[..., Any]] = {"ours (_http11)": pinned_client, "httpx alone": HttpxPinned}


def act_body() -> Dict[str, Any]:
    frames = [camera_frame(1), camera_frame(2)]
    return {"model": "pi05-droid", "seed": 7, "observation": {
        "images": [{"view": "exterior_1", "data": frames[0], "timestamp_ms": None},
                   {"view": "wrist_left", "data": frames[1], "timestamp_ms": None}],
        "proprioception": {"joint_positions": [0.0, -0.5, 0.0, -2.1, 0.0, 1.6, 0.78], "joint_velocities": None,
                           "end_effector_pose": None, "gripper": [0.0]},
        "instruction": "pick up the cup"}}


def _act_caller(platform: Any, make: Callable[..., Any], body: Dict[str, Any]) -> Tuple[Callable[[str], Any], Any]:
    """One request through `WorkerConnection.act` (the worker's /act path as a run takes it), and
    what to close after."""
    from sequence_ai._link._worker import WorkerConnection
    from sequence_ai._net._http import gateway_client

    gateway = gateway_client(platform.base_url, platform.api_key, 10.0)
    connection = WorkerConnection(gateway=gateway, base_url=platform.base_url, model="pi05-droid",
                                  timeout_s=10.0, transport=make)

    def close() -> None:
        connection.close()
        gateway.close()

    return lambda rid: connection.act(body, rid=rid, episode_id="bench"), close


def _post_caller(platform: Any, make: Callable[..., Any], body: Dict[str, Any]) -> Tuple[Callable[[str], Any], Any]:
    """One `post` on the transport alone, admitted by our own gateway client: what runs where the
    gateway's httpx client needs a newer httpx than 0.22.0."""
    from sequence_ai._link._admission import parse_grant
    from sequence_ai._net._http11 import GatewayClient
    from sequence_ai._net._transport import compact_json

    with GatewayClient(platform.base_url, headers={"Authorization": f"Bearer {platform.api_key}"}) as gateway:
        grant = parse_grant(gateway.post("/v1/act/connect", json={"model": "pi05-droid", "session": "b" * 32})
                            .raise_for_status().json())
    headers = {"Authorization": f"Bearer {grant.direct_secret}", "Content-Type": "application/json"}
    client = make(grant.worker_url, grant.cert_fingerprint, headers, 10.0)
    content = compact_json({**body, "episode_id": "bench"})

    def post(rid: str) -> Any:
        return client.post("/act", content=content, headers={"X-Seq-Request-Id": rid}).raise_for_status().json()

    return post, client.close


def cpu_per_request(requests: int, gap: float, rounds: int, layer: str) -> Dict[str, List[float]]:
    """{client: every request's CPU in ms}, alternating clients on one platform."""
    from sequence_ai.platform.spawn import LocalPlatform

    body = act_body()
    costs: Dict[str, List[float]] = {name: [] for name in CLIENTS}
    caller = _act_caller if layer == "act" else _post_caller
    with LocalPlatform() as platform:
        for number in range(rounds):
            for name in (list(CLIENTS) if number % 2 == 0 else list(CLIENTS)[::-1]):
                send, close = caller(platform, CLIENTS[name], body)
                send("r-warm0000")
                for i in range(requests):
                    time.sleep(gap)
                    started = time.thread_time()
                    send(f"r-{i:08x}")
                    costs[name].append((time.thread_time() - started) * 1000.0)
                close()
                print(f"round {number}: {name:16s} {statistics.median(costs[name][-requests:]):.3f} ms CPU per "
                      f"request (median of {requests})", flush=True)
    return costs


def _silent(request: Any, wire: Any) -> None:
    wire.stop.wait(30.0)  # reads the request, never answers


def _attempt(client: Any, timeout: float, close_after: Optional[float]) -> str:
    """What `client.post` raised and after how long; `close_after`: another thread calls
    `client.close()` that many seconds into the request."""
    refused: List[str] = []

    def close() -> None:
        try:
            client.close()
        except Exception as exc:  # httpcore 0.14 refuses to close a pool with a request in flight
            refused.append(f" (close() raised {type(exc).__name__})")

    if close_after is not None:
        threading.Timer(close_after, close).start()
    started = time.monotonic()
    try:
        client.post("/act", content=b"{}", timeout=timeout)
        said = "answered"
    except Exception as exc:  # the row shows whatever it was
        said = type(exc).__name__
    return f"{said} after {time.monotonic() - started:.2f} s" + "".join(refused)


def hardening() -> List[List[str]]:
    """Rows: case, then per client what it raised and after how long."""
    sys.path[:0] = [os.path.join(common.ROOT, "test", "client"), os.path.join(common.ROOT, "test", "reliability")]
    from _hostile import CHUNKED_HEAD, HostileUpstream, chunk_answer, endless, trickle

    ok = None  # the real pin
    cases = [  # case, the worker's reply, pin, timeout, close() after
        ("answer trickled 1 B / 0.2 s, 1 s deadline", trickle(chunk_answer()), ok, 1.0, None),
        ("Content-Length 400 MiB, body without end",
         endless(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (400 << 20), b"\0"), ok, 1.0, None),
        ("body until close, without end", endless(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", b"\0"), ok, 1.0,
         None),
        ("chunked body without end", endless(CHUNKED_HEAD, b"10000\r\n" + b"\0" * 0x10000 + b"\r\n"), ok, 1.0, None),
        ("chunk-size line without end", endless(CHUNKED_HEAD, b"f"), ok, 1.0, None),
        ("header block without end", endless(b"HTTP/1.1 200 OK\r\n", b"X-Filler: 0123456789\r\n"), ok, 1.0, None),
        ("close() 0.3 s into a 5 s request", _silent, ok, 5.0, 0.3),
        ("certificate not the pinned one", None, "00" * 32, 1.0, None),
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, HostileUpstream(Path(tmp)) as up:
        headers = {"Authorization": f"Bearer {up.direct_secret}"}
        for case, reply, pin, timeout, close_after in cases:
            row = [case]
            for make in CLIENTS.values():
                up.worker.reset()
                if reply is not None:
                    up.worker.on("/act", reply)
                reached = up.worker.count("/act")
                client = make(up.worker_url, pin or up.fingerprint, headers, timeout)
                said = _attempt(client, timeout, close_after)
                if pin is not None:
                    said += f", {up.worker.count('/act') - reached} requests reached the worker"
                row.append(said)
                client.close()
            rows.append(row)
    return rows


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--gap", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-hardening", action="store_true")
    parser.add_argument("--only-hardening", action="store_true", help="no platform: runs on any httpx")
    parser.add_argument("--layer", choices=("act", "post"), default="act",
                        help="time WorkerConnection.act (default) or the transport's post alone")
    args = parser.parse_args(argv)
    print(f"httpx {httpx.__version__}, python {sys.version.split()[0]}")
    if not args.only_hardening:
        report_cpu(cpu_per_request(args.requests, args.gap, args.rounds, args.layer))
    if not args.skip_hardening:
        print("\nhostile worker: what each client raised, and when")
        for case, *said in hardening():
            print(f"  {case:44s} | " + " | ".join(f"{name}: {s}" for name, s in zip(CLIENTS, said)))
    return 0


def report_cpu(costs: Dict[str, List[float]]) -> None:
    period_ms = 1000.0 / HZ
    print(f"\n{'client':16s} {'ms/request p50':>15s} {'p90':>7s} {'ms/action':>10s} {'% of period':>12s}")
    for name, values in costs.items():
        p50 = statistics.median(values)
        per_action = p50 / ACTIONS_PER_REQUEST
        print(f"{name:16s} {p50:15.3f} {common.percentile(values, 90):7.3f} {per_action:10.3f} "
              f"{100.0 * per_action / period_ms:11.2f}%")
    ours, theirs = (statistics.median(values) for values in costs.values())
    print(f"httpx alone costs {theirs - ours:+.3f} ms per request = {(theirs - ours) / ACTIONS_PER_REQUEST:+.3f} ms "
          f"per action ({100.0 * (theirs - ours) / ACTIONS_PER_REQUEST / period_ms:+.2f}% of the {period_ms:.1f} ms "
          f"period at {HZ:g} Hz)")


if __name__ == "__main__":
    sys.exit(main())
