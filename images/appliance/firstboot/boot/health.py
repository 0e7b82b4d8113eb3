"""syncmesh-health.service: GET /health answers the status file as JSON (200 when ready, 503 before)."""

from __future__ import annotations

import http.server
import json

from .common import HEALTH_PORT
from .status import database_info, read_status


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path not in ("/", "/health"):
            self.send_error(404, "GET /health")
            return
        status = read_status() or {
            "state": "booting",
            "ready": False,
            "message": "the node has not read its node file yet",
            "database": database_info(),
        }
        self.answer(200 if status.get("ready") else 503, status)

    def answer(self, code: int, doc: dict) -> None:
        body = (json.dumps(doc, indent=2) + "\n").encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002 (http.server's signature)
        pass


def serve(port: int = HEALTH_PORT) -> int:
    http.server.ThreadingHTTPServer(("0.0.0.0", port), Health).serve_forever()
    return 0
