"""The gateway through the HTTP proxy the environment names: httpx over httpcore's `HTTPProxy` with
the client's own network backend (`sequence_ai/_net/_httpx_gateway.py`), its credentials sent as
Proxy-Authorization. The proxy here is a real one on loopback that forwards each request and notes
it; test/test_distribution_sets.py runs this on every httpcore the client supports."""

from __future__ import annotations

import base64
import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar, Iterator, List, Tuple
from urllib.parse import urlsplit

import pytest
from _loop_robot import observation, policy_for

import sequence_ai

_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authorization", "proxy-connection", "transfer-encoding"}


class _Forwarding(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: ClassVar[List[Tuple[str, str, str, str]]] = []  # (method, absolute URL, Proxy-Authorization, User-Agent)

    def _forward(self) -> None:
        target = urlsplit(self.path)  # a proxy is asked in absolute form: http://host:port/path
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append((self.command, self.path, self.headers.get("Proxy-Authorization", ""),
                          self.headers.get("User-Agent", "")))
        upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            upstream.request(self.command, target.path + (f"?{target.query}" if target.query else ""), body, headers)
            answer = upstream.getresponse()
            content = answer.read()
        finally:
            upstream.close()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in _HOP_BY_HOP | {"content-length"}:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    do_GET = do_POST = do_DELETE = _forward

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def proxy() -> Iterator[str]:
    _Forwarding.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Forwarding)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://robot:s3cret@127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(10)


def test_the_gateway_is_reached_through_the_proxy_the_environment_names(platform, proxy, monkeypatch):
    for name in ("ALL_PROXY", "HTTPS_PROXY", "NO_PROXY", "all_proxy", "https_proxy", "no_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy)
    with policy_for(platform) as policy:
        assert policy.predict(observation()).action_chunk.action_dim == 8
    through = {(method, url.split("?")[0]) for method, url, _, _ in _Forwarding.seen}
    assert ("GET", f"{platform.base_url}/v1/models") in through, through
    assert ("POST", f"{platform.base_url}/v1/act/connect") in through, through
    credentials = "Basic " + base64.b64encode(b"robot:s3cret").decode()
    assert {auth for _, _, auth, _ in _Forwarding.seen} == {credentials}
    # what the gateway is told: the 0.20.0 wire, this project's release (sequence_ai/_version.py)
    assert {agent for _, _, _, agent in _Forwarding.seen} == {f"sequence-ai-python/{sequence_ai.__version__}"}
