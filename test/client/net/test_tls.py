"""Certificate pinning: the pin is checked on every pooled connection and fails closed."""

from __future__ import annotations

import http.server
import ssl
import threading
from typing import ClassVar

import pytest
from _tls_cert import self_signed

from sequence_ai import CertPinError
from sequence_ai._net._http11 import pinned_client
from sequence_ai._net._tls import normalise_fingerprint


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    connections: ClassVar[set] = set()

    def do_GET(self):
        _Handler.connections.add(self.client_address)
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def tls_server(tmp_path):
    cert_path, key_path, fingerprint = self_signed(tmp_path)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.handle_error = lambda request, address: None  # a client that hangs up on a bad pin is expected
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Handler.connections = set()
    yield f"https://127.0.0.1:{server.server_address[1]}", fingerprint
    server.shutdown()
    server.server_close()


def test_normalise_fingerprint_accepts_openssl_colon_form():
    raw = "ab" * 32
    colon = ":".join("AB" for _ in range(32))
    assert normalise_fingerprint(colon) == raw
    assert normalise_fingerprint(f"  {raw.upper()} ") == raw


@pytest.mark.parametrize("bad", [None, 12, "", "abc", "zz" * 32, "ab" * 33])
def test_normalise_fingerprint_rejects_missing_or_malformed_pin(bad):
    with pytest.raises(CertPinError):
        normalise_fingerprint(bad)


def test_pinned_client_rejects_plain_http_before_any_socket():
    with pytest.raises(CertPinError):
        pinned_client("http://127.0.0.1:1", "ab" * 32, headers={}, timeout=1.0)


def test_matching_pin_serves_over_one_kept_alive_connection(tls_server):
    url, fingerprint = tls_server
    with pinned_client(url, fingerprint.upper(), headers={}, timeout=5.0) as client:
        for _ in range(3):
            assert client.get("/ping").json() == {"ok": True}
    assert len(_Handler.connections) == 1


def test_pin_mismatch_fails_closed_with_cert_pin_error(tls_server):
    url, fingerprint = tls_server
    wrong = ("0" if fingerprint[0] != "0" else "1") + fingerprint[1:]
    with pinned_client(url, wrong, headers={}, timeout=5.0) as client, pytest.raises(CertPinError) as info:
        client.get("/ping")
    assert wrong not in str(info.value)
    assert _Handler.connections == set()  # no request reached the server


def test_pin_is_checked_on_every_pooled_connection(tls_server):
    url, fingerprint = tls_server
    wrong = ("0" if fingerprint[0] != "0" else "1") + fingerprint[1:]
    with pinned_client(url, wrong, headers={}, timeout=5.0) as client:
        for _ in range(3):
            with pytest.raises(CertPinError):
                client.get("/ping")
