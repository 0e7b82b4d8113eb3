"""The boot program's gateway client against a real local HTTP server (python3 -m unittest discover -s images/appliance/node)."""

from __future__ import annotations

import http.server
import os
import socket
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
# in the image these sit in /usr/lib/syncmesh/python (payload.sh copies them from the collection)
COLLECTION = os.path.join(HERE, "..", "..", "..", "ansible", "collections", "ansible_collections", "syncmesh", "edge")
sys.path.insert(0, os.path.join(COLLECTION, "plugins", "module_utils"))

import appliance  # noqa: E402


class Server:
    """Answers 200 with the request count, except the requests whose numbers are in `drop`:
    those get their connection closed without a byte, as a port proxy does whose service is not listening yet."""

    def __init__(self, drop: set[int]):
        self.requests = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                outer.requests += 1
                if outer.requests in drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                body = str(outer.requests).encode()
                self.send_response(200)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class GatewayRetryTest(unittest.TestCase):
    def test_a_connection_closed_without_an_answer_is_retried(self):
        s = Server(drop={1, 2})
        try:
            gw = appliance.Gateway("admin:pw", url=s.url, retry_s=10, pause_s=0.05)
            self.assertEqual(gw.request("GET", "/system/functions"), (200, "3"))
            self.assertEqual(s.requests, 3)
        finally:
            s.close()

    def test_a_gateway_that_never_answers_fails_after_the_retry_time_saying_what(self):
        with socket.socket() as free:  # a port nothing listens on
            free.bind(("127.0.0.1", 0))
            port = free.getsockname()[1]
        gw = appliance.Gateway("admin:pw", url=f"http://127.0.0.1:{port}", retry_s=0.3, pause_s=0.05)
        with self.assertRaises(RuntimeError) as ctx:
            gw.request("GET", "/system/functions")
        self.assertIn("did not answer GET /system/functions", str(ctx.exception))


if __name__ == "__main__":
    unittest.main()
