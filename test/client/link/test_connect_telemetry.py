"""Telemetry never disturbs the loop: failures are swallowed, reports carry timings only."""

from __future__ import annotations

import time

import pytest

from sequence_ai._link._act_request import ActTrace
from sequence_ai._link._telemetry import TelemetrySender, act_report
from sequence_ai._net._http import telemetry_client
from sequence_ai._net._http11 import GatewayClient
from sequence_ai._net._httpx_gateway import HttpxGateway

# Both clients the sender may be given: the lean one, and httpx (behind a proxy).
CLIENTS = [pytest.param(GatewayClient, id="lean"),
           pytest.param(lambda url, timeout: HttpxGateway(url, {}, timeout), id="httpx")]


def test_the_sender_uses_the_lean_client_unless_a_proxy_is_configured(monkeypatch):
    for name in ("ALL_PROXY", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    lean = telemetry_client("https://gateway.invalid", "sk-key", 10.0)
    assert isinstance(lean, GatewayClient) and lean._headers["Authorization"] == "Bearer sk-key"
    monkeypatch.setenv("https_proxy", "http://127.0.0.1:3128")
    assert isinstance(telemetry_client("https://gateway.invalid", "sk-key", 10.0), HttpxGateway)
    monkeypatch.delenv("https_proxy")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:3128")
    assert isinstance(telemetry_client("http://127.0.0.1:8080", None, 10.0), HttpxGateway)


@pytest.mark.parametrize("client", CLIENTS)
def test_telemetry_to_an_unreachable_gateway_is_swallowed(client):
    sender = TelemetrySender(client("http://127.0.0.1:9", timeout=0.5))
    trace = ActTrace(rid="r-00000001", rtt_s=0.1)
    for _ in range(100):
        sender.submit(act_report(trace, "served", total_s=0.12, perf={"handler_ms": 40.0}))
    sender.close()
    assert sender.sent == 0


def test_served_report_derives_network_time_from_handler_time():
    report = act_report(ActTrace(rid="r-1", rtt_s=0.1), "served", total_s=0.12, perf={"handler_ms": 40.0})
    assert report["client"]["rtt_ms"] == 100.0 and report["client"]["network_ms"] == 60.0
    assert report["client"]["total_ms"] == 120.0 and report["perf"] == {"handler_ms": 40.0}


def test_failed_report_has_no_perf_and_no_total():
    report = act_report(ActTrace(rid="r-1"), "error", perf={"handler_ms": 1.0})
    assert report["perf"] == {} and report["client"]["total_ms"] is None and report["client"]["network_ms"] is None


@pytest.mark.parametrize("client", CLIENTS)
def test_submitting_and_closing_never_wait_long_on_a_gateway_that_does_not_answer(client):
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts connections in the kernel, never answers
    port = silent.getsockname()[1]
    try:
        sender = TelemetrySender(client(f"http://127.0.0.1:{port}", timeout=10.0))
        started = time.monotonic()
        for _ in range(100):
            sender.submit(act_report(ActTrace(rid="r-1", rtt_s=0.1), "served", total_s=0.1))
        # Submitting never waits on the network: one submit that waited for this gateway would
        # take its whole 10 s timeout.
        assert time.monotonic() - started < 5.0
        started = time.monotonic()
        sender.close()
        assert time.monotonic() - started < 3.0
    finally:
        silent.close()
