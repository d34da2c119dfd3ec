"""The client's own HTTP/1.1 (`sequence_ai._net._http11`) against a loopback server (TLS, or plain for
the gateway's telemetry) that answers each request with scripted bytes: framing, keep-alive, and
every way an answer can break maps to one of the seam's transport errors (which the reconnect
logic handles) — never a hang, never a wrong body. The gateway client verifies certificates like
httpx."""

from __future__ import annotations

import json
import socket
import ssl
import threading
from typing import List, Optional, Tuple

import httpx
import pytest
from _tls_cert import self_signed

from sequence_ai import CertPinError
from sequence_ai._net._http11 import GatewayClient, pinned_client
from sequence_ai._net._transport import ConnectFailed, ConnectionLost, TransportClosed, TransportTimeout

OK = b'{"ok":true}'


def answer(body: bytes = OK, status: str = "200 OK", extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}\r\n"
            ).encode() + body


class ScriptedTLS:
    """Answers request i with script[i] = (bytes, close_after); records each request's head, body
    and the connection it came on."""

    def __init__(self, tmp_path, script: List[Tuple[bytes, bool]], tls: bool = True):
        self.cert, key, self.fingerprint = self_signed(tmp_path)
        self.context: Optional[ssl.SSLContext] = None
        if tls:
            self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.context.load_cert_chain(self.cert, key)
        self.script = list(script)
        self.requests: List[Tuple[int, bytes, bytes]] = []  # (connection number, head, body)
        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._connection, args=(raw, self.connections), daemon=True).start()

    def _connection(self, raw: socket.socket, number: int) -> None:
        try:
            sock = raw if self.context is None else self.context.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        buffer = b""
        try:
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = sock.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                while len(buffer) < length:
                    buffer += sock.recv(65536)
                body, buffer = buffer[:length], buffer[length:]
                self.requests.append((number, head, body))
                reply, close = self.script.pop(0) if self.script else (answer(), False)
                if reply:
                    sock.sendall(reply)
                if close:
                    sock.close()
                    return
        except (OSError, ssl.SSLError):
            return

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def scripted(tmp_path):
    servers: List[ScriptedTLS] = []

    def make(*script: Tuple[bytes, bool], tls: bool = True) -> ScriptedTLS:
        server = ScriptedTLS(tmp_path, list(script), tls=tls)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


def client_for(server: ScriptedTLS, timeout: Optional[float] = 5.0):
    return pinned_client(server.url, server.fingerprint, headers={"Authorization": "Bearer s3cret"}, timeout=timeout)


def test_a_post_sends_one_json_request_with_its_headers_and_reads_the_answer(scripted):
    server = scripted((answer(b'{"steps":[[1.5]]}', extra="X-Seq-Request-Id: r-1\r\n"), False))
    with client_for(server) as client:
        response = client.post("/act", json={"a": [1, 2], "text": "grüße"}, headers={"X-Seq-Request-Id": "r-1"})
    assert response.status_code == 200
    assert response.json() == {"steps": [[1.5]]}
    assert response.headers.get("X-SEQ-REQUEST-ID") == "r-1" and response.headers["x-seq-request-id"] == "r-1"
    _, head, body = server.requests[0]
    assert head.startswith(b"POST /act HTTP/1.1\r\n")
    lines = {line.split(b":")[0].lower(): line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")[1:]}
    assert lines[b"authorization"] == b"Bearer s3cret"
    assert lines[b"content-type"] == b"application/json"
    assert lines[b"x-seq-request-id"] == b"r-1"
    assert int(lines[b"content-length"]) == len(body)
    assert json.loads(body) == {"a": [1, 2], "text": "grüße"}


def test_nan_in_a_body_is_refused_before_anything_is_sent(scripted):
    server = scripted()
    with client_for(server) as client, pytest.raises(ValueError):
        client.post("/act", json={"x": float("nan")})
    assert server.requests == []


def test_requests_share_one_kept_alive_connection(scripted):
    server = scripted()
    with client_for(server) as client:
        for _ in range(4):
            assert client.get("/ping").json() == {"ok": True}
    assert server.connections == 1 and len(server.requests) == 4


def test_connection_close_and_a_worker_that_hung_up_while_idle_both_get_a_fresh_connection(scripted):
    server = scripted((answer(extra="Connection: close\r\n"), False), (answer(), True), (answer(), False))
    with client_for(server) as client:
        for _ in range(3):
            assert client.get("/ping").status_code == 200
    assert [number for number, _, _ in server.requests] == [1, 2, 3]


def test_chunked_and_read_until_close_answers_are_framed_right(scripted):
    chunked = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"4;ext=1\r\n{\"ok\r\n7\r\n\":true}\r\n0\r\nX-Trailer: 1\r\n\r\n")
    until_close = b"HTTP/1.1 200 OK\r\n\r\n" + OK
    server = scripted((chunked, False), (answer(b'{"n":2}'), False), (until_close, True), (answer(b'{"n":4}'), False))
    with client_for(server) as client:
        assert client.get("/a").json() == {"ok": True}
        assert client.get("/b").json() == {"n": 2}  # same connection after the chunked answer
        assert client.get("/c").json() == {"ok": True}
        assert client.get("/d").json() == {"n": 4}
    assert [number for number, _, _ in server.requests] == [1, 1, 1, 2]


def test_an_answer_longer_than_one_read_arrives_whole(scripted):
    big = json.dumps({"values": list(range(60000))}).encode()  # ~400 KB: many reads of the socket
    server = scripted((answer(big), False), (answer(b'{"n":2}'), False))
    with client_for(server) as client:
        assert client.get("/big").content == big
        assert client.get("/next").json() == {"n": 2}  # nothing of the long answer left behind
    assert [number for number, _, _ in server.requests] == [1, 1]


def test_an_interim_100_answer_is_skipped(scripted):
    server = scripted((b"HTTP/1.1 100 Continue\r\n\r\n" + answer(b'{"n":1}'), False))
    with client_for(server) as client:
        assert client.get("/x").json() == {"n": 1}


@pytest.mark.parametrize("reply, error", [
    (b"", ConnectionLost),  # hung up without a word
    (answer(b'{"steps": [[1.0, 2.0]]}')[:-6], ConnectionLost),  # dropped mid-body
    (b"NOT HTTP AT ALL\r\n\r\n", ConnectionLost),
    (b"HTTP/1.1 200 OK\r\nContent-Length: banana\r\n\r\n", ConnectionLost),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", ConnectionLost),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", ConnectionLost),
], ids=["no-answer", "mid-body", "status-line", "content-length", "header-line", "chunk-size"])
def test_a_broken_answer_is_a_transport_error_and_the_next_request_works(scripted, reply, error):
    server = scripted((reply, True), (answer(b'{"after":1}'), False))
    with client_for(server) as client:
        with pytest.raises(error):
            client.post("/act", json={})
        assert client.post("/act", json={}).json() == {"after": 1}


def test_a_worker_that_never_answers_is_a_read_timeout(scripted):
    server = scripted((b"", False))
    with client_for(server, timeout=0.3) as client, pytest.raises(TransportTimeout):
        client.post("/act", json={})


def test_nothing_listening_is_a_connect_error(tmp_path):
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    client = pinned_client(f"https://127.0.0.1:{port}", "ab" * 32, headers={}, timeout=2.0)
    with client, pytest.raises(ConnectFailed):
        client.get("/ping")


def test_a_wrong_pin_sends_no_byte_on_any_attempt(scripted):
    server = scripted()
    wrong = ("0" if server.fingerprint[0] != "0" else "1") + server.fingerprint[1:]
    with pinned_client(server.url, wrong, headers={}, timeout=5.0) as client:
        for _ in range(2):
            with pytest.raises(CertPinError):
                client.post("/act", json={"secret": "never sent"})
    assert server.requests == []


def test_a_closed_client_refuses_requests(scripted):
    server = scripted()
    client = client_for(server)
    assert client.get("/ping").status_code == 200
    client.close()
    with pytest.raises(TransportClosed):
        client.get("/ping")


def test_a_header_with_a_line_break_is_refused_before_sending(scripted):
    server = scripted()
    with client_for(server) as client, pytest.raises(ValueError):
        client.get("/ping", headers={"X-Seq-Request-Id": "a\r\nInjected: 1"})
    assert server.requests == []


def test_error_answers_keep_their_body_and_raise_for_status_maps_them(scripted):
    server = scripted((answer(b'{"detail":"busy"}', status="429 Too Many Requests", extra="Retry-After: 2\r\n"), False))
    with client_for(server) as client:
        response = client.post("/act", json={})
    assert response.status_code == 429 and response.text == '{"detail":"busy"}'
    from sequence_ai import Unavailable

    with pytest.raises(Unavailable) as info:
        response.raise_for_status()
    assert info.value.retry_after_s == 2.0


# -- the gateway's client (telemetry) ----------------------------------------------------------


def heads(server: ScriptedTLS) -> List[bytes]:
    return [head for _, head, _ in server.requests]


def test_the_gateway_client_posts_over_plain_http_on_one_kept_alive_connection_under_the_url_path(scripted):
    server = scripted(tls=False)
    with GatewayClient(server.url + "/base/", headers={"Authorization": "Bearer sk-key"}, timeout=5.0) as client:
        for n in range(3):
            assert client.post("/v1/reports/act", json={"reports": [n]}).json() == {"ok": True}
    assert [number for number, _, _ in server.requests] == [1, 1, 1]
    assert all(head.startswith(b"POST /base/v1/reports/act HTTP/1.1\r\n") for head in heads(server))
    assert all(b"\r\nAuthorization: Bearer sk-key" in head for head in heads(server))
    assert f"\r\nHost: 127.0.0.1:{server.port}".encode() in heads(server)[0]
    assert [json.loads(body) for _, _, body in server.requests] == [{"reports": [n]} for n in range(3)]


def test_the_gateway_client_sends_once_more_when_a_kept_alive_connection_closes_unanswered(scripted):
    # The second post meets the server closing the idle connection: it goes again, on a new one.
    server = scripted((answer(), False), (b"", True), (answer(b'{"n":3}'), False), tls=False)
    with GatewayClient(server.url, timeout=5.0) as client:
        assert client.post("/v1/reports/act", json={"reports": [1]}).status_code == 200
        assert client.post("/v1/reports/act", json={"reports": [2]}).json() == {"n": 3}
    assert [number for number, _, _ in server.requests] == [1, 1, 2]
    assert [json.loads(body) for _, _, body in server.requests] == [{"reports": [1]}, {"reports": [2]}, {"reports": [2]}]


@pytest.mark.parametrize("script", [
    [(b"", True)],  # a new connection: the server really did not answer
    [(answer(), False), (answer(b'{"steps": [[1.0, 2.0]]}')[:-6], True)],  # part of an answer came
], ids=["new-connection", "part-answered"])
def test_the_gateway_client_does_not_send_again_after_a_new_connection_or_part_of_an_answer(scripted, script):
    server = scripted(*script, tls=False)
    with GatewayClient(server.url, timeout=5.0) as client, pytest.raises(ConnectionLost):
        for _ in script:
            client.post("/v1/reports/act", json={})
    assert len(server.requests) == len(script)


def test_the_worker_client_leaves_sending_again_to_the_act_loop(scripted):
    server = scripted((answer(), False), (b"", True))
    with client_for(server) as client:
        client.post("/act", json={})
        with pytest.raises(ConnectionLost):
            client.post("/act", json={})
    assert len(server.requests) == 2


def test_the_gateway_client_verifies_https_like_httpx_and_sends_nothing_to_an_untrusted_server(scripted, monkeypatch):
    server = scripted()
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with GatewayClient(server.url, timeout=5.0) as client, pytest.raises(ConnectFailed, match="the gateway"):
        client.post("/v1/reports/act", json={"secret": "never sent"})
    assert server.requests == []
    # Trusted the way httpx is told to trust it (SSL_CERT_FILE): accepted.
    monkeypatch.setenv("SSL_CERT_FILE", str(server.cert))
    assert httpx.Client(base_url=server.url).post("/v1/reports/act", json={}).status_code == 200
    with GatewayClient(server.url, timeout=5.0) as client:
        assert client.post("/v1/reports/act", json={"n": 1}).status_code == 200
    assert len(server.requests) == 2


def test_the_gateway_client_checks_the_host_name(scripted, monkeypatch):
    server = scripted()
    monkeypatch.setenv("SSL_CERT_FILE", str(server.cert))  # trusted, but issued to 127.0.0.1 only
    with GatewayClient(f"https://localhost:{server.port}", timeout=5.0) as client, \
            pytest.raises(ConnectFailed, match="TLS handshake with the gateway"):
        client.post("/v1/reports/act", json={})
    assert server.requests == []


def test_the_gateway_client_refuses_a_url_that_is_not_http():
    with pytest.raises(ValueError, match="not http"):
        GatewayClient("ftp://127.0.0.1:21")
