"""A tiny real HTTP gateway that answers scripted statuses, for the failure shapes the local
platform has no fault for (a 503 from decide, a warming perceive). It serves the local
platform's own catalogue rows so names resolve exactly as they do against the platform."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Tuple

from sequence_ai.platform import catalogue

Answer = Tuple[int, Dict[str, str], Any]


class ScriptedGateway:
    def __init__(self) -> None:
        self.script: Dict[str, List[Answer]] = {}
        self.seen: List[Tuple[str, Any]] = []
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, headers: Dict[str, str], body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.startswith("/v1/models"):
                    self._send(200, {}, {"object": "list", "data": catalogue.rows()})
                else:
                    self._send(404, {}, {"detail": "not found"})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"null")
                gateway.seen.append((self.path, body))
                queue = gateway.script.get(self.path) or [(404, {}, {"detail": "not scripted"})]
                status, headers, answer = queue.pop(0) if len(queue) > 1 else queue[0]
                self._send(status, headers, answer)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedGateway:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
