"""The health checker (node_health.py, the appliance's and the Ansible node's GET /health) against
fake services on loopback ports: each part down in turn (port closed, a faasd-style proxy with
nothing behind it, or the service saying it is not ready) → 503 naming it; back → 200. The
database probe also against the real MongoDB test server when it is built (make deps).
(python3 -m unittest discover -s images/appliance/firstboot)"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.join(HERE, "..", "..", "..")
COLLECTION = os.path.join(REPO, "ansible", "collections", "ansible_collections", "syncmesh", "edge")
sys.path.insert(0, os.path.join(COLLECTION, "plugins", "module_utils"))

import node_health  # noqa: E402
from boot import health  # noqa: E402

JAR = os.path.join(REPO, "tools", "mongo-test-server", "java", "target", "mongo-test-server.jar")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_reply(code: int, body: bytes = b"") -> bytes:
    return b"HTTP/1.1 %d X\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s" % (code, len(body), body)


def read_request(rfile) -> str:
    line = rfile.readline().decode()
    while rfile.readline() not in (b"\r\n", b"\n", b""):
        pass
    return line.split(" ")[1] if " " in line else ""


def mongo_reply(fields: dict) -> bytes:
    doc = node_health.bson_doc({k: v for k, v in fields.items() if k != "ok"})
    # ok as a double, as MongoDB sends it: insert it before the document's terminating zero
    ok = b"\x01ok\x00" + struct.pack("<d", float(fields["ok"]))
    doc = struct.pack("<i", len(doc) + len(ok)) + doc[4:-1] + ok + b"\0"
    body = struct.pack("<I", 0) + b"\0" + doc
    return struct.pack("<iiii", 16 + len(body), 7, 1, node_health.OP_MSG) + body


class Fake:
    """One fake service on a fixed loopback port. mode: up | sick (answers, unhealthy) | proxy
    (accepts, closes without a byte: faasd's port proxy with the service dead) | closed (nothing listens)."""

    def __init__(self, kind: str):
        self.kind, self.port, self.mode, self.server = kind, free_port(), "up", None
        self.start()

    def start(self) -> None:
        fake = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                if fake.mode == "proxy":
                    return
                sick = fake.mode == "sick"
                if fake.kind == "http":
                    path = read_request(self.rfile)
                    ok_paths = ("/healthz", "/function/syncmesh-fn/readyz", "/readyz")
                    if path == "/v2/":  # the registry: basic auth on
                        self.wfile.write(http_reply(503 if sick else 401, b'{"errors":[]}'))
                    else:
                        self.wfile.write(http_reply(503 if sick or path not in ok_paths else 200, b'{"ready": false}' if sick else b"OK"))
                elif fake.kind == "h2":
                    self.rfile.read(len(node_health.H2_PREFACE) + 9)
                    self.wfile.write(b"\0\0\0" + bytes([0 if sick else 4, 0]) + b"\0\0\0\0")
                elif fake.kind == "mongo":
                    length = struct.unpack("<i", self.rfile.read(4))[0]
                    self.rfile.read(length - 4)
                    self.wfile.write(mongo_reply({"ok": 0, "errmsg": "shutting down"} if sick else {"ok": 1}))

        class Server(socketserver.ThreadingTCPServer):
            allow_reuse_address = True
            daemon_threads = True

        self.server = Server(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def set(self, mode: str) -> None:
        if mode == "closed" and self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        elif mode != "closed" and not self.server:
            self.start()
        self.mode = mode

    def close(self) -> None:
        self.set("closed")


class Node:
    """A node of fakes: the gateway (the function behind it), listener, agent, database, registry."""

    KINDS = {"gateway": "http", "listener": "http", "agent": "h2", "database": "mongo", "registry": "http"}

    def __init__(self):
        self.fakes = {name: Fake(kind) for name, kind in self.KINDS.items()}
        self.parts = node_health.node_parts(ports={name: f.port for name, f in self.fakes.items()})

    def close(self):
        for f in self.fakes.values():
            f.close()


class CheckTest(unittest.TestCase):
    def setUp(self):
        self.node = Node()
        self.addCleanup(self.node.close)

    def check(self) -> dict:
        return node_health.check(self.node.parts, timeout=1)

    def test_all_up_lists_every_part(self):
        doc = self.check()
        self.assertTrue(doc["ok"], doc)
        self.assertEqual(doc["failing"], [])
        self.assertEqual([p["name"] for p in doc["parts"]], ["gateway", "function", "listener", "agent", "database", "registry"])
        for p in doc["parts"]:
            self.assertEqual(set(p), {"name", "ok", "latency_ms", "detail"})
            self.assertTrue(p["ok"], p)
            self.assertGreaterEqual(p["latency_ms"], 0)

    def test_each_part_down_in_turn_is_named_then_back(self):
        for name, fake in self.node.fakes.items():
            for mode in ("closed", "proxy", "sick"):
                with self.subTest(part=name, mode=mode):
                    fake.set(mode)
                    doc = self.check()
                    self.assertFalse(doc["ok"])
                    self.assertIn(name, doc["failing"])
                    # the function is asked through the gateway: a dead gateway fails it too, nothing else fails
                    allowed = {name, "function"} if name == "gateway" else {name}
                    self.assertLessEqual(set(doc["failing"]), allowed, doc)
                    part = next(p for p in doc["parts"] if p["name"] == name)
                    self.assertFalse(part["ok"])
                    self.assertTrue(part["detail"])
                    fake.set("up")
                    self.assertTrue(self.check()["ok"], f"{name} back")

    def test_a_proxy_with_nothing_behind_it_is_not_healthy(self):
        for name in ("agent", "database"):
            self.node.fakes[name].set("proxy")
        doc = self.check()
        for name in ("agent", "database"):
            part = next(p for p in doc["parts"] if p["name"] == name)
            self.assertIn("closed it without an answer", part["detail"])

    def test_a_silent_service_costs_at_most_the_timeout_all_at_once(self):
        # a port that accepts and never answers: each probe waits its own timeout, in parallel
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        self.addCleanup(silent.close)
        port = silent.getsockname()[1]
        parts = node_health.node_parts(ports=dict.fromkeys(Node.KINDS, port))
        t0 = time.monotonic()
        doc = node_health.check(parts, timeout=0.5)
        took = time.monotonic() - t0
        self.assertEqual(doc["failing"], ["gateway", "function", "listener", "agent", "database", "registry"])
        self.assertLess(took, 2, "the whole check stays within its timeout, not the sum of them")

    def test_registry_only_where_the_compose_file_lists_it(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("# header\nversion: '3.7'\nservices:\n  gateway:\n    image: x\n  mongodb:\n    ports:\n    - a\n")
            f.write("  listener:\n    image: x\n  miso-agent:\n    image: x\nfunctions: {}\n")
        self.addCleanup(os.unlink, f.name)
        names = [p.name for p in node_health.present(self.node.parts, node_health.compose_services(f.name))]
        self.assertEqual(names, ["gateway", "function", "listener", "agent", "database"])
        self.assertIsNone(node_health.compose_services(f.name + ".missing"))
        self.assertEqual(len(node_health.present(self.node.parts, None)), 6)

    def test_the_golden_compose_file_lists_every_part(self):
        services = node_health.compose_services(os.path.join(REPO, "images", "node", "golden", "docker-compose.yaml"))
        self.assertEqual(len(node_health.present(self.node.parts, services)), 6)


class HealthUrlTest(unittest.TestCase):
    """The health URL as a watchdog or a load balancer sees it (the Ansible node's and the appliance's)."""

    def setUp(self):
        self.node = Node()
        self.addCleanup(self.node.close)
        self.status = {"state": "ready", "ready": True, "message": "node ready", "node_id": "n1"}

    def serve(self, respond) -> str:
        import http.server

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), node_health.handler(respond))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        return f"http://127.0.0.1:{server.server_address[1]}"

    def get(self, url: str) -> tuple[int, dict]:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as err:
            return err.code, json.load(err)

    def test_node_url_200_then_503_naming_the_part_then_200(self):
        checker = node_health.Checker(lambda: self.node.parts, timeout=1, cache_s=0)
        url = self.serve(lambda: node_health.node_response(checker)) + "/health"
        code, doc = self.get(url)
        self.assertEqual(code, 200, doc)
        for name, fake in self.node.fakes.items():
            with self.subTest(part=name):
                fake.set("closed")
                code, doc = self.get(url)
                self.assertEqual(code, 503)
                self.assertIn(name, doc["failing"])
                fake.set("up")
                self.assertEqual(self.get(url)[0], 200)
        code, doc = self.get(url.replace("/health", "/nope"))
        self.assertEqual(code, 404)

    def test_appliance_booting_is_503_with_its_state(self):
        checker = node_health.Checker(lambda: self.node.parts, timeout=1, cache_s=0)
        url = self.serve(lambda: health.respond(checker, lambda: self.status)) + "/health"
        self.status = {"state": "starting", "ready": False, "message": "preparing the node"}
        code, doc = self.get(url)
        self.assertEqual(code, 503)
        self.assertEqual((doc["state"], doc["message"], doc["failing"]), ("starting", "preparing the node", ["boot"]))
        self.status = {"state": "ready", "ready": True, "message": "node ready", "node_id": "n1"}
        code, doc = self.get(url)
        self.assertEqual((code, doc["state"], doc["node_id"], doc["ok"]), (200, "ready", "n1", True))
        self.node.fakes["listener"].set("sick")
        code, doc = self.get(url)
        self.assertEqual((code, doc["state"], doc["failing"]), (503, "ready", ["listener"]))
        self.status = None  # no status file yet
        code, doc = self.get(url)
        self.assertEqual((code, doc["state"], doc["failing"][0]), (503, "booting", "boot"))

    def test_the_cache_makes_a_flood_cost_one_check(self):
        calls = []
        checker = node_health.Checker(lambda: calls.append(1) or self.node.parts, timeout=1, cache_s=60)
        for _ in range(5):
            checker()
        self.assertEqual(len(calls), 1)


@unittest.skipUnless(os.path.exists(JAR), f"the MongoDB test server is not built ({JAR}: make deps)")
class RealTestServerTest(unittest.TestCase):
    """The database probe against the real MongoDB-compatible test server (mongo-java-server)."""

    def test_ping_ok_then_down_when_it_dies(self):
        port = free_port()
        data = tempfile.mkdtemp(prefix="health-mongo-")
        proc = subprocess.Popen(
            ["java", "-Xmx128m", "-jar", JAR, "--bind", "127.0.0.1", "--port", str(port), "--data-dir", data],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", data], check=False))
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        probe = node_health.mongodb_probe("127.0.0.1", port)
        deadline, last = time.monotonic() + 60, ""
        while time.monotonic() < deadline:
            try:
                self.assertEqual(probe(2), "ping ok")
                break
            except (OSError, node_health.Unhealthy) as err:
                last = str(err)
                time.sleep(0.2)
        else:
            self.fail(f"the test server did not answer ping within 60 s: {last}")
        proc.kill()
        proc.wait()
        with self.assertRaises(OSError):
            probe(1)


if __name__ == "__main__":
    unittest.main()
