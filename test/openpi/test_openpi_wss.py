"""wss:// to openpi's real server behind a TLS-terminating proxy (what a user puts in front of it), its
certificate signed by a CA made here. Trusted through SSL_CERT_FILE, `predict` and `run` work as over ws://;
untrusted (or issued to another host), the connection is refused in the handshake, before a byte of the
request or its key is sent, with an error naming the URL and the certificate's problem, and no retries."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from _openpi_server import OpenpiServer
from _robot import START, Arm
from _tls_proxy import TlsProxy
from test_openpi_link import expected_rows

import sequence_ai
from sequence_ai._net._websocket import TlsRefused

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "client"))
from _tls_cert import signed_by_test_ca

sys.path.pop(0)

REFUSAL_BOUND_S = 10.0  # a refusal is one handshake; a reconnect loop or a warming wait would take far longer
KEY = "pi-key-never-sent-untrusted"


@pytest.fixture
def proxied(tmp_path):
    """(proxy, CA file): the stand-in behind openpi's server, behind a TLS proxy on 127.0.0.1."""
    ca, cert, key = signed_by_test_ca(tmp_path)
    with OpenpiServer("--latency-ms", "40") as server, TlsProxy(server.port, cert, key) as proxy:
        yield proxy, ca


def test_predict_and_run_over_wss_with_a_private_ca_trusted_through_ssl_cert_file(proxied, monkeypatch):
    proxy, ca = proxied
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    monkeypatch.setenv("OPENPI_API_KEY", KEY)
    with sequence_ai.connect(model="pi05_droid", base_url=proxy.url()) as policy:
        arm = Arm(policy, "pick up the cup")
        chunk = policy.predict(arm.observe()).action_chunk
        assert chunk.steps == expected_rows("pick up the cup", START, 0.0)
        outcome = policy.run(arm.observe, arm.act, max_actions=20, validate=lambda a: True, progress=False)
        assert (outcome.reason, outcome.actions) == ("completed", 20)
    assert proxy.handshakes >= 1 and proxy.handshake_errors == []
    assert f"Authorization: Api-Key {KEY}".encode() in proxy.from_client  # the key went inside TLS


def _refused_predict(url: str) -> tuple:
    with sequence_ai.connect(model="pi05_droid", base_url=url, startup_timeout_s=60.0) as policy:
        arm = Arm(policy)
        started = time.monotonic()
        with pytest.raises(TlsRefused) as refused:
            policy.predict(arm.observe())
        return refused.value.message, time.monotonic() - started


def test_a_certificate_from_an_untrusted_ca_is_refused_before_any_request(proxied, monkeypatch):
    proxy, _ = proxied
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("OPENPI_API_KEY", KEY)
    message, took = _refused_predict(proxy.url())
    assert proxy.url() in message and "certificate" in message
    assert "unable to get local issuer certificate" in message  # OpenSSL's words for a CA it does not know
    assert "SSL_CERT_FILE" in message  # and how to trust one
    assert took < REFUSAL_BOUND_S
    assert proxy.connections == 1 and proxy.handshakes == 0  # one attempt, no reconnect loop
    assert bytes(proxy.from_client) == b""  # nothing crossed: no request, no key


def test_a_certificate_for_another_host_is_refused_even_from_a_trusted_ca(proxied, monkeypatch):
    proxy, ca = proxied
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))  # trusted, but issued to 127.0.0.1 only
    message, took = _refused_predict(proxy.url("localhost"))
    assert proxy.url("localhost") in message and "Hostname mismatch" in message
    assert took < REFUSAL_BOUND_S
    assert proxy.handshakes == 0 and bytes(proxy.from_client) == b""


def test_doctor_over_wss_checks_healthz_over_https_and_names_an_untrusted_certificate(proxied, monkeypatch, capsys):
    from test_openpi_cli import lines_of

    from sequence_ai import cli

    proxy, ca = proxied
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    assert cli.main(["--base-url", proxy.url(), "doctor"]) == 0
    seen = lines_of(capsys.readouterr().out)
    assert seen["healthz"].startswith("200 (") and seen["predict"].startswith("15×8 chunk")
    handshakes = proxy.handshakes
    monkeypatch.delenv("SSL_CERT_FILE")
    assert cli.main(["--base-url", proxy.url(), "doctor", "--wait", "60"]) == 1
    seen = lines_of(capsys.readouterr().out)
    assert seen["server"].startswith(f"FAILED — {proxy.url()}: the server's TLS certificate was refused")
    assert "warming" not in seen and proxy.handshakes == handshakes  # refused at once, never waited on


def test_wss_to_a_server_without_tls_is_refused_naming_the_handshake(proxied):
    proxy, _ = proxied
    url = f"wss://127.0.0.1:{proxy.upstream_port}"  # openpi's server itself: plain ws://, it hangs up on TLS
    message, took = _refused_predict(url)
    assert message.startswith(f"{url}: the TLS handshake failed") and "speak TLS there?" in message
    assert took < REFUSAL_BOUND_S  # at once: not five reconnects
