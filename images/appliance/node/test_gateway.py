"""The boot program's gateway client against a real local HTTP server (python3 -m unittest discover -s images/appliance/node)."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import socket
import sys
import tempfile
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


class FakeGateway:
    """The function API of a gateway: GET /system/function/NAME, POST/PUT /system/functions. With
    `slow_create`, a POST gets its connection closed without an answer (the gateway's write
    timeout) and the function appears `slow_create` seconds later, as faasd goes on creating it."""

    def __init__(self, slow_create: float | None = None, never_create: bool = False):
        self.functions: dict[str, dict] = {}
        self.calls: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _answer(self, code: int, body: str = ""):
                data = body.encode()
                self.send_response(code)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802
                name = self.path.rsplit("/", 1)[-1]
                if name in outer.functions:
                    self._answer(200, json.dumps(outer.functions[name]))
                else:
                    self._answer(404, "not found")

            def _write(self, method: str):
                fn = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.calls.append(method)
                if method == "POST" and (outer.slow_create is not None or never_create):
                    if not never_create:
                        threading.Timer(outer.slow_create, lambda: outer.functions.__setitem__(fn["service"], fn)).start()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if method == "POST" and fn["service"] in outer.functions:
                    return self._answer(400, "already exists")
                outer.functions[fn["service"]] = fn
                self._answer(202)

            def do_POST(self):  # noqa: N802
                self._write("POST")

            def do_PUT(self):  # noqa: N802
                self._write("PUT")

            def log_message(self, *args):
                pass

        self.slow_create = slow_create
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


FN = {"service": "syncmesh-fn", "image": "localhost/syncmesh-fn:1", "envVars": {"SYNCMESH_NODE_ID": "node-1"}}


class GatewayDeployTest(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.state)

    def gateway(self, fake: FakeGateway, settle_s: float = 10) -> appliance.Gateway:
        return appliance.Gateway("admin:pw", url=fake.url, retry_s=2, pause_s=0.05, state_dir=self.state, settle_s=settle_s)

    def test_the_same_spec_is_not_sent_again_and_a_changed_one_is_an_update(self):
        fake = FakeGateway()
        try:
            gw = self.gateway(fake)
            self.assertEqual(gw.deploy(FN), "created")
            self.assertEqual(gw.deploy(FN), "unchanged")
            changed = {**FN, "envVars": {"SYNCMESH_NODE_ID": "node-9"}}
            self.assertEqual(gw.deploy(changed), "updated")
            self.assertEqual(fake.calls, ["POST", "PUT"])
            self.assertEqual(fake.functions["syncmesh-fn"]["envVars"]["SYNCMESH_NODE_ID"], "node-9")
        finally:
            fake.close()

    def test_a_create_whose_answer_is_lost_is_not_sent_twice(self):
        fake = FakeGateway(slow_create=0.5)
        try:
            gw = self.gateway(fake)
            self.assertTrue(gw.deploy(FN).startswith("created"))
            self.assertEqual(fake.calls, ["POST"])
            # a restart of the boot program (same spec): nothing is sent
            self.assertEqual(gw.deploy(FN), "unchanged")
            self.assertEqual(fake.calls, ["POST"])
        finally:
            fake.close()

    def test_a_create_that_never_appears_fails_saying_what(self):
        fake = FakeGateway(never_create=True)
        try:
            gw = self.gateway(fake, settle_s=0.5)
            with self.assertRaises(RuntimeError) as ctx:
                gw.deploy(FN)
            self.assertIn("syncmesh-fn did not appear within 0.5 s", str(ctx.exception))
            self.assertEqual(fake.calls, ["POST"])
            self.assertEqual(os.listdir(self.state), [])  # the next start sends it again
        finally:
            fake.close()


class FakeRegistry:
    """A function's registry over `meta` requests: lists its nodes, applies mutations. The
    requests whose numbers are in `drop` get their connection closed without an answer."""

    def __init__(self, drop: set[int]):
        self.requests = 0
        self.mutations: list[dict] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests += 1
                if outer.requests in drop:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if body["query"].lstrip().startswith("mutation"):
                    outer.mutations.append(body)
                    answer = {"data": {}}
                else:
                    answer = {"data": {"nodes": []}}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


ME = {"id": "node-1", "address": "http://10.0.0.11:8080/function/syncmesh-fn", "lat": 42.69, "lon": 23.32, "own_node": True}


class RegistryRetryTest(unittest.TestCase):
    def test_a_lost_answer_is_retried_until_the_registry_lists_the_node(self):
        fake = FakeRegistry(drop={1})
        try:
            appliance.sync_registry(fake.url, "s" * 64, "node-1", [ME], within_s=10, pause_s=0.05, timeout_s=5)
            self.assertEqual(fake.requests, 3)  # the dropped list, the list again, one mutation
            self.assertEqual(len(fake.mutations), 1)
        finally:
            fake.close()

    def test_a_registry_that_never_answers_fails_saying_what(self):
        fake = FakeRegistry(drop=set(range(1, 1000)))
        try:
            with self.assertRaises(RuntimeError) as ctx:
                appliance.sync_registry(fake.url, "s" * 64, "node-1", [ME], within_s=0.3, pause_s=0.05, timeout_s=5)
            self.assertIn("the node's registry could not be updated within 0.3 s", str(ctx.exception))
            self.assertEqual(fake.mutations, [])
        finally:
            fake.close()


if __name__ == "__main__":
    unittest.main()
