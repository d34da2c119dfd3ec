"""Which key goes where, as in the reference client (sequence-ai 0.20.0, compared by running it):
the catalogue carries the key whenever the client has one, and an empty `api_key=""` falls back to
$SEQUENCES_API_KEY."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from _loop_robot import MODEL, observation

from sequence_ai import AuthError, connect, models
from sequence_ai.platform import catalogue


@pytest.fixture
def recording_gateway():
    """A loopback gateway serving the local catalogue and recording each request's Authorization."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            seen.append(self.headers.get("Authorization"))
            body = json.dumps({"object": "list", "data": catalogue.rows()}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_the_catalogue_carries_the_key_whenever_the_client_has_one(recording_gateway, monkeypatch):
    url, seen = recording_gateway
    monkeypatch.delenv("SEQUENCES_API_KEY", raising=False)
    models(base_url=url)
    models(base_url=url, api_key="seq_test_from_argument")
    monkeypatch.setenv("SEQUENCES_API_KEY", "seq_test_from_environment")
    models(base_url=url)
    assert seen == [None, "Bearer seq_test_from_argument", "Bearer seq_test_from_environment"]


def test_an_empty_api_key_falls_back_to_the_environment(platform, monkeypatch):
    monkeypatch.setenv("SEQUENCES_API_KEY", platform.api_key)
    with connect(MODEL, api_key="", base_url=platform.base_url, startup_timeout_s=30.0) as policy:
        assert len(policy.predict(observation()).action_chunk) > 0
    monkeypatch.delenv("SEQUENCES_API_KEY")
    with pytest.raises(AuthError, match="no API key"):
        connect(MODEL, api_key="", base_url=platform.base_url)
