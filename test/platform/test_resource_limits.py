"""What a caller without credentials, or with a flood of odd requests, can make the platform hold:
nothing of a body it is not allowed to send, a bounded table of statistics, bounded telemetry.

Each attack runs against a platform process of its own, over real sockets, and the platform's
resident memory (psutil) is read before and after, with generous bounds.
"""

from __future__ import annotations

import concurrent.futures
import json
import secrets
import socket
import ssl
import time

import httpx
import psutil
import pytest
from eventually import wait_until
from platform_helpers import connect

from sequence_ai.platform.spawn import LocalPlatform

MIB = 1024 * 1024



def _rss_mb(pid: int) -> float:
    return psutil.Process(pid).memory_info().rss / MIB


def _address(url: str) -> tuple:
    host, port = url.split("://", 1)[1].rsplit(":", 1)
    return host, int(port)


def _open(url: str) -> socket.socket:
    sock = socket.create_connection(_address(url), timeout=5.0)
    if url.startswith("https://"):
        context = ssl.create_default_context()
        context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # no secret is sent: nothing to protect
        sock = context.wrap_socket(sock)
    return sock


def _status_line(sock: socket.socket, timeout_s: float) -> bytes:
    sock.settimeout(timeout_s)
    try:
        return sock.recv(64).split(b"\r\n", 1)[0]
    except (socket.timeout, OSError):
        return b""


def _chunked_head(path: str, authorization: str = "") -> bytes:
    auth = f"Authorization: {authorization}\r\n" if authorization else ""
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{auth}"
            "Transfer-Encoding: chunked\r\n\r\n").encode()


def _chunk(size: int) -> bytes:
    return b"%x\r\n" % size + b"x" * size + b"\r\n"


@pytest.mark.parametrize("app", ["gateway", "worker"])
def test_a_chunked_upload_without_credentials_gets_401_before_its_body_is_sent(platform, app):
    # The head and one chunk, then nothing: the answer must not wait for the rest of the body.
    url, path = (platform.base_url, "/v1/act/connect") if app == "gateway" else (connect(platform)["worker_url"], "/act")
    with _open(url) as sock:
        sock.sendall(_chunked_head(path, "Bearer " + "x" * 40) + _chunk(1024))
        assert _status_line(sock, 5.0) == b"HTTP/1.1 401 Unauthorized"


def _upload_without_a_key(base_url: str, total: int) -> int:
    """Like an attacker: head, then `total` bytes of chunks whatever the server says; bytes sent."""
    sent = 0
    piece = _chunk(MIB)
    try:
        with _open(base_url) as sock:
            sock.sendall(_chunked_head("/v1/act/connect"))
            while sent < total:
                sock.sendall(piece)
                sent += MIB
    except OSError:
        pass  # the server may close once it has answered
    return sent


def test_keyless_chunked_uploads_do_not_grow_the_gateway():
    with LocalPlatform() as p:
        before = _rss_mb(p.pid)
        with concurrent.futures.ThreadPoolExecutor(24) as pool:
            list(pool.map(lambda _: _upload_without_a_key(p.base_url, 15 * MIB), range(24)))
        grown = _rss_mb(p.pid) - before
        assert httpx.get(p.base_url + "/v1/health").status_code == 200
    # Buffered before the 401, 24 x 15 MiB took the gateway from ~60 to ~410 MB.
    assert grown < 60, f"24 keyless 15 MiB uploads grew the gateway by {grown:.0f} MB"


def _answered(sock: socket.socket, method: str, path: str) -> None:
    """One request on a kept-alive socket, its whole answer read (httpx spends ~5 ms on a 15 KB URL)."""
    sock.sendall(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(65536)
    head, _, body = answer.partition(b"\r\n\r\n")
    length = int(next(line.split(b":", 1)[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(body) < length:
        body += sock.recv(65536)


def test_request_statistics_stay_bounded_whatever_paths_are_asked_for():
    with LocalPlatform() as p:
        before = _rss_mb(p.pid)
        filler = "p" * 15000  # h11 takes header blocks up to 16 KiB
        with socket.create_connection(_address(p.base_url), timeout=10.0) as sock:
            for _ in range(2000):
                _answered(sock, "GET", f"/{secrets.token_hex(8)}/{filler}")
            for i in range(100):
                _answered(sock, f"X{i}", "/v1/health")  # methods are the caller's words too
        grown = _rss_mb(p.pid) - before
        rows = p.stats().get("gateway", {})
    assert len(rows) <= 12, f"{len(rows)} statistics rows after 2100 odd requests"
    assert sum(sum(counts.values()) for counts in rows.values()) == 2100, "every request is still counted"
    assert grown < 10, f"2000 random 15 KB paths grew the gateway by {grown:.0f} MB"


def test_telemetry_is_bounded_per_request_per_report_and_in_total(platform):
    headers = {"Authorization": f"Bearer {platform.api_key}"}
    url = platform.base_url + "/v1/reports/act"
    normal = {"rid": "r-1", "outcome": "served", "client": {"rtt_ms": 12.5}, "perf": {"handler_ms": 3.1}}
    assert httpx.post(url, json={"reports": [normal] * 64}, headers=headers).json() == {"ok": True, "received": 64}
    huge = httpx.post(url, json={"reports": [{"blob": "x" * (2 * MIB)}]}, headers=headers)
    assert huge.status_code == 413 and "bytes" in huge.json()["detail"]
    fat = httpx.post(url, json={"reports": [normal, {"blob": "x" * 20000}]}, headers=headers)
    assert fat.status_code == 413 and "reports[1]" in fat.json()["detail"], fat.text
    nan = httpx.post(url, content=b'{"reports": [{"rtt_ms": NaN}]}', headers={**headers, "Content-Type": "application/json"})
    assert nan.status_code == 422 and "NaN" in nan.json()["detail"], nan.text
    assert len(platform.reports(limit=1024)) == 64, "a refused batch stores nothing"


def test_telemetry_floods_do_not_grow_the_gateway():
    with LocalPlatform() as p:
        headers = {"Authorization": f"Bearer {p.api_key}", "Content-Type": "application/json"}
        body = json.dumps({"reports": [{"blob": "x" * (8 * MIB)}]}).encode()
        before = _rss_mb(p.pid)
        with httpx.Client(timeout=30.0) as client:
            started = time.monotonic()
            for _ in range(30):
                client.post(p.base_url + "/v1/reports/act", content=body, headers=headers)
        grown = _rss_mb(p.pid) - before
    # Stored whole, 30 x 8 MiB reports kept ~250 MB.
    assert grown < 60, f"30 reports of 8 MiB grew the gateway by {grown:.0f} MB in {time.monotonic() - started:.1f}s"


def _closed_by_peer(sock: socket.socket, wait_s: float) -> bool:
    sock.settimeout(wait_s)
    try:
        while True:
            if sock.recv(4096) == b"":
                return True
    except socket.timeout:
        return False
    except OSError:  # reset
        return True


def _all_closed(socks, deadline: float) -> list:
    """The sockets still open at `deadline` (monotonic)."""
    return [s for s in socks if not _closed_by_peer(s, max(0.01, deadline - time.monotonic()))]


def test_slow_callers_are_cut_off_and_the_gateway_keeps_serving():
    # Slowloris: heads that trickle in a byte at a time, bodies that stall, sockets (and TLS
    # handshakes) that never start. Every one is closed within the read timeout, trickle or not.
    timeout_s = 1.5
    with LocalPlatform("--read-timeout", str(timeout_s)) as p:
        worker_url = connect(p)["worker_url"]
        trickling = [socket.create_connection(_address(p.base_url)) for _ in range(120)]
        for sock in trickling:
            sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        silent = [socket.create_connection(_address(p.base_url)) for _ in range(40)]
        stalled = [socket.create_connection(_address(p.base_url)) for _ in range(20)]
        for sock in stalled:
            sock.sendall(b"POST /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n{")
        no_handshake = [socket.create_connection(_address(worker_url)) for _ in range(20)]
        slow_over_tls = [_open(worker_url) for _ in range(20)]
        for sock in slow_over_tls:
            sock.sendall(b"POST /act HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        sockets = trickling + silent + stalled + no_handshake + slow_over_tls
        try:
            while time.monotonic() - started < timeout_s + 1.0:  # a byte every 0.25 s keeps nothing alive
                for sock in trickling:
                    try:
                        sock.send(b"x")
                    except OSError:
                        pass
                time.sleep(0.25)
            open_ones = _all_closed(sockets, started + timeout_s + 8.0)
            assert not open_ones, f"{len(open_ones)} of {len(sockets)} slow sockets still open after " \
                                  f"{time.monotonic() - started:.1f}s (read timeout {timeout_s}s)"
            assert httpx.get(p.base_url + "/v1/health", timeout=5.0).status_code == 200
        finally:
            for sock in sockets:
                sock.close()


def test_connections_beyond_the_cap_are_closed_at_once():
    with LocalPlatform("--max-connections", "20") as p:
        held = [socket.create_connection(_address(p.base_url)) for _ in range(20)]
        try:
            for sock in held:  # answered once, so surely accepted and counted; then a head that never ends
                sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert _status_line(sock, 5.0) == b"HTTP/1.1 200 OK"
                sock.sendall(b"GET /v1/health HTTP/1.1\r\n")
            extra = [socket.create_connection(_address(p.base_url)) for _ in range(10)]
            started = time.monotonic()
            assert not _all_closed(extra, started + 3.0), "connections over the cap were kept"
            assert time.monotonic() - started < 3.0
            for sock in extra:
                sock.close()
        finally:
            for sock in held:
                sock.close()
        assert wait_until(lambda: httpx.get(p.base_url + "/v1/health", timeout=5.0).status_code == 200, 5.0)
