"""The boot program's gateway client and its deploy step, and its registry client, against real
local HTTP servers (python3 -m unittest discover -s images/appliance/firstboot)."""

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

import node_stack  # noqa: E402
from boot import gateway, registry_client  # noqa: E402

REPO = os.path.join(HERE, "..", "..", "..")
NODE = os.path.join(REPO, "images", "node")


class Handler(http.server.BaseHTTPRequestHandler):
    """The fakes' request handler: answers, or drops a connection without a byte (as a port proxy
    does whose service is not listening yet, or a gateway that gave up on a request)."""

    def answer(self, code: int, body: str = "") -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def drop(self) -> None:
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def body(self) -> dict:
        return json.loads(self.rfile.read(int(self.headers["content-length"])))

    def log_message(self, *args):
        pass


class Fake:
    """A local HTTP server on a free port running `handler` in threads."""

    def serve(self, handler: type[Handler]) -> None:
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class Server(Fake):
    """Answers 200 with the request count, except the requests whose numbers are in `drop`."""

    def __init__(self, drop: set[int]):
        self.requests = 0
        outer = self

        class Counting(Handler):
            def do_GET(self):  # noqa: N802
                outer.requests += 1
                if outer.requests in drop:
                    return self.drop()
                self.answer(200, str(outer.requests))

        self.serve(Counting)


class GatewayRetryTest(unittest.TestCase):
    def test_a_connection_closed_without_an_answer_is_retried(self):
        s = Server(drop={1, 2})
        try:
            gw = gateway.Gateway("admin:pw", url=s.url, retry_s=10, pause_s=0.05)
            self.assertEqual(gw.request("GET", "/system/functions"), (200, "3"))
            self.assertEqual(s.requests, 3)
        finally:
            s.close()

    def test_a_gateway_that_never_answers_fails_after_the_retry_time_saying_what(self):
        with socket.socket() as free:  # a port nothing listens on
            free.bind(("127.0.0.1", 0))
            port = free.getsockname()[1]
        gw = gateway.Gateway("admin:pw", url=f"http://127.0.0.1:{port}", retry_s=0.3, pause_s=0.05)
        with self.assertRaises(RuntimeError) as ctx:
            gw.request("GET", "/system/functions")
        self.assertIn("did not answer GET /system/functions", str(ctx.exception))


class FakeGateway(Fake):
    """The function API of a gateway: GET /system/function/NAME, POST/PUT /system/functions. With
    `slow_create`, a POST gets its connection closed without an answer (the gateway's write
    timeout) and the function appears `slow_create` seconds later, as faasd goes on creating it."""

    def __init__(self, slow_create: float | None = None, never_create: bool = False):
        self.functions: dict[str, dict] = {}
        self.secrets: dict[str, str] = {}
        self.calls: list[str] = []
        outer = self

        class Functions(Handler):
            def do_GET(self):  # noqa: N802
                name = self.path.rsplit("/", 1)[-1]
                if name in outer.functions:
                    return self.answer(200, json.dumps(outer.functions[name]))
                self.answer(404, "not found")

            def write(self, method: str):
                fn = self.body()
                if self.path == "/system/secrets":
                    outer.secrets[fn["name"]] = fn["value"]
                    return self.answer(202)
                outer.calls.append(method)
                if method == "POST" and (slow_create is not None or never_create):
                    if not never_create:
                        threading.Timer(slow_create, lambda: outer.functions.__setitem__(fn["service"], fn)).start()
                    return self.drop()
                if method == "POST" and fn["service"] in outer.functions:
                    return self.answer(400, "already exists")
                outer.functions[fn["service"]] = fn
                self.answer(202)

            def do_POST(self):  # noqa: N802
                self.write("POST")

            def do_PUT(self):  # noqa: N802
                self.write("PUT")

        self.serve(Functions)


FN = {"service": "syncmesh-fn", "image": "localhost/syncmesh-fn:1", "envVars": {"SYNCMESH_NODE_ID": "node-1"}}


class GatewayDeployTest(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.state)

    def gateway(self, fake: FakeGateway, settle_s: float = 10) -> gateway.Gateway:
        return gateway.Gateway("admin:pw", url=fake.url, retry_s=2, pause_s=0.05, state_dir=self.state, settle_s=settle_s)

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


class DeployTest(unittest.TestCase):
    """deploy_functions: the node description rendered by the collection's node_stack (the golden
    input renders the golden functions), each secret the functions list stored from the folder."""

    def setUp(self):
        self.state = tempfile.mkdtemp()
        self.secrets = os.path.join(self.state, "secrets")
        os.makedirs(self.secrets)
        with open(os.path.join(NODE, "golden", "values.json"), encoding="utf-8") as f:
            self.values = json.load(f)

    def tearDown(self):
        shutil.rmtree(self.state)

    def test_the_golden_functions_are_deployed_with_their_secrets(self):
        for name in ("mesh-secret", "write-key", "mongodb-uri"):
            with open(os.path.join(self.secrets, name), "w", encoding="utf-8") as f:
                f.write(f"value-of-{name}\n")
        fake = FakeGateway()
        try:
            gw = gateway.Gateway("admin:pw", url=fake.url, retry_s=2, pause_s=0.05, state_dir=self.state)
            bodies = gateway.deploy_functions(gw, os.path.join(NODE, "node.yml"), self.values, self.secrets)
            with open(os.path.join(NODE, "golden", "functions.json"), encoding="utf-8") as f:
                self.assertEqual(node_stack.functions_json(bodies), f.read())  # byte for byte, in the golden form
            self.assertEqual(fake.secrets, {n: f"value-of-{n}" for n in ("mesh-secret", "write-key", "mongodb-uri")})
            self.assertEqual(fake.functions["syncmesh-fn"], bodies[0])
        finally:
            fake.close()

    def test_a_missing_secret_file_fails_before_anything_is_sent(self):
        fake = FakeGateway()
        try:
            gw = gateway.Gateway("admin:pw", url=fake.url, retry_s=2, pause_s=0.05, state_dir=self.state)
            with self.assertRaises(RuntimeError) as ctx:
                gateway.deploy_functions(gw, os.path.join(NODE, "node.yml"), self.values, self.secrets)
            self.assertIn("the secret mesh-secret", str(ctx.exception))
            self.assertEqual((fake.secrets, fake.calls), ({}, []))
        finally:
            fake.close()


class FakeRegistry(Fake):
    """A function's registry over `meta` requests: lists no nodes, records mutations. The
    requests whose numbers are in `drop` get their connection closed without an answer; with
    `refuse`, every mutation gets that 400 error body."""

    def __init__(self, drop: set[int], refuse: dict | None = None):
        self.requests = 0
        self.mutations: list[dict] = []
        outer = self

        class Registry(Handler):
            def do_POST(self):  # noqa: N802
                body = self.body()
                outer.requests += 1
                if outer.requests in drop:
                    return self.drop()
                if body["query"].lstrip().startswith("mutation"):
                    outer.mutations.append(body)
                    if refuse:
                        return self.answer(400, json.dumps({"errors": [refuse], "data": None}))
                    return self.answer(200, json.dumps({"data": {}}))
                self.answer(200, json.dumps({"data": {"nodes": []}}))

        self.serve(Registry)


ME = {"id": "node-1", "address": "http://10.0.0.11:8080/function/syncmesh-fn", "lat": 42.69, "lon": 23.32, "own_node": True}


class RegistryRetryTest(unittest.TestCase):
    def test_a_lost_answer_is_retried_until_the_registry_lists_the_node(self):
        fake = FakeRegistry(drop={1})
        try:
            registry_client.sync_registry(fake.url, "s" * 64, "node-1", [ME], within_s=10, pause_s=0.05, timeout_s=5)
            self.assertEqual(fake.requests, 3)  # the dropped list, the list again, one mutation
            self.assertEqual(len(fake.mutations), 1)
        finally:
            fake.close()

    def test_a_registry_that_never_answers_fails_saying_what(self):
        fake = FakeRegistry(drop=set(range(1, 1000)))
        try:
            with self.assertRaises(RuntimeError) as ctx:
                registry_client.sync_registry(fake.url, "s" * 64, "node-1", [ME], within_s=0.3, pause_s=0.05, timeout_s=5)
            self.assertIn("the node's registry could not be updated within 0.3 s", str(ctx.exception))
            self.assertEqual(fake.mutations, [])
        finally:
            fake.close()

    def test_a_refused_request_fails_at_once_with_the_function_s_code_and_message(self):
        refuse = {"message": "node 'node-1' is already registered", "extensions": {"code": "EDGE_SYNCMESH_NODE_EXISTS"}}
        fake = FakeRegistry(drop=set(), refuse=refuse)
        try:
            with self.assertRaises(registry_client.RegistryRefused) as ctx:
                registry_client.sync_registry(fake.url, "s" * 64, "node-1", [ME], within_s=60, pause_s=0.05, timeout_s=5)
            self.assertIn("HTTP 400: EDGE_SYNCMESH_NODE_EXISTS: node 'node-1' is already registered", str(ctx.exception))
            self.assertEqual(len(fake.mutations), 1)  # not sent again
        finally:
            fake.close()


if __name__ == "__main__":
    unittest.main()
