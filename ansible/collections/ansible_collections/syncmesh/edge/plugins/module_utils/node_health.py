"""A Syncmesh Edge node's health, checked now: every service of the node asked in parallel, each
with a short timeout, on every GET /health (the appliance's and the Ansible node's health URL).

The one checker of both paths: the appliance's boot program serves it with its boot state
(images/appliance/firstboot/boot/health.py; payload.sh copies this file to /usr/lib/syncmesh/python),
and the Ansible role syncmesh_node installs it as /usr/local/lib/syncmesh-edge/node_health.py with
its own syncmesh-health.service. Standard library only (it runs on the node). The JSON format and
what each part means: docs/guides/operate.md ("Health URL").

  part      asked                                                     healthy when
  gateway   GET http://127.0.0.1:8080/healthz                         200
  function  GET http://127.0.0.1:8080/function/syncmesh-fn/readyz    200 (through the gateway)
  listener  GET http://127.0.0.1:8091/readyz                          200 (streams streaming, function acknowledging)
  agent     HTTP/2 connection preface to 127.0.0.1:7070               the agent's gRPC server answers with SETTINGS
  database  MongoDB `ping` (OP_MSG) to 127.0.0.1:27017                {ok: 1}
  registry  GET http://127.0.0.1:5000/v2/                             200 or 401 (basic auth on)

faasd publishes ports with a proxy that accepts a connection even when the service behind it is
dead (and closes it at once), so no part is "the port accepts": each probe needs an answer in the
service's own protocol. Parts whose faasd service the node's docker-compose.yaml does not list
are left out (the registry "where present").

    python3 node_health.py serve [--port 8099]   GET /health: 200 when every part is healthy, else 503
    python3 node_health.py check                 the same JSON on stdout; exit 0 healthy, 1 not

Env: SYNCMESH_HEALTH_PORT (8099), SYNCMESH_HEALTH_TIMEOUT_S (1.5: each probe; the whole check
ends within it plus a little), SYNCMESH_HEALTH_CACHE_S (1: a result this fresh answers the next
request too, so a flood of requests costs one check a second), SYNCMESH_HEALTH_COMPOSE
(/var/lib/faasd/docker-compose.yaml), SYNCMESH_HEALTH_FUNCTION (syncmesh-fn).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import http.client
import http.server
import json
import os
import re
import socket
import struct
import sys
import threading
import time
import urllib.parse

PORT = int(os.environ.get("SYNCMESH_HEALTH_PORT", "8099"))
TIMEOUT_S = float(os.environ.get("SYNCMESH_HEALTH_TIMEOUT_S", "1.5"))
CACHE_S = float(os.environ.get("SYNCMESH_HEALTH_CACHE_S", "1"))
COMPOSE = os.environ.get("SYNCMESH_HEALTH_COMPOSE", "/var/lib/faasd/docker-compose.yaml")
FUNCTION = os.environ.get("SYNCMESH_HEALTH_FUNCTION", "syncmesh-fn")
HOST = "127.0.0.1"


class Unhealthy(Exception):
    """A probe's answer (or its absence), said in one line."""


class Part:
    """One thing the node runs: its name in the JSON, the faasd service it is (None: always
    checked), what is asked (the detail starts with it) and its probe (returns a one-line
    detail, raises Unhealthy or OSError)."""

    def __init__(self, name: str, service: str | None, target: str, probe):
        self.name, self.service, self.target, self.probe = name, service, target, probe


# ---------------------------------------------------------------------------------------------
# probes


def http_probe(url: str, healthy: tuple[int, ...] = (200,)):
    parts = urllib.parse.urlsplit(url)

    def probe(timeout: float) -> str:
        conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
        try:
            conn.request("GET", parts.path or "/", headers={"connection": "close"})
            r = conn.getresponse()
            code, body = r.status, r.read(200)
        finally:
            conn.close()
        text = " ".join(body.decode("utf-8", "replace").split())[:160]
        if code not in healthy:
            raise Unhealthy(f"HTTP {code}" + (f": {text}" if text else ""))
        return f"HTTP {code}"

    return probe


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise Unhealthy("the port accepted the connection and closed it without an answer (nothing listens behind it)")
        data += chunk
    return data


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
H2_SETTINGS = 0x4


def h2_probe(host: str, port: int):
    """A gRPC server (HTTP/2) answers a client's connection preface with its SETTINGS frame."""

    def probe(timeout: float) -> str:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(H2_PREFACE + struct.pack(">I", 0)[1:] + bytes([H2_SETTINGS, 0]) + struct.pack(">I", 0))
            header = _recv_exactly(s, 9)
            if header[3] != H2_SETTINGS:
                raise Unhealthy(f"answered, but not with HTTP/2 SETTINGS (frame type {header[3]})")
        return "the gRPC (HTTP/2) server answered"

    return probe


def bson_doc(fields: dict) -> bytes:
    """A BSON document of int32 and string fields (all a ping needs)."""
    body = b""
    for key, value in fields.items():
        name = key.encode() + b"\0"
        if isinstance(value, int):
            body += b"\x10" + name + struct.pack("<i", value)
        else:
            raw = str(value).encode() + b"\0"
            body += b"\x02" + name + struct.pack("<i", len(raw)) + raw
    return struct.pack("<i", len(body) + 5) + body + b"\0"


# bytes each BSON type takes after its name (None: an int32 length prefix says it)
_BSON_FIXED = {0x01: 8, 0x07: 12, 0x08: 1, 0x09: 8, 0x0A: 0, 0x10: 4, 0x11: 8, 0x12: 8, 0x13: 16}


def bson_top_level(doc: bytes) -> dict:
    """The top-level number, bool and string fields of a BSON document (others skipped)."""
    out: dict = {}
    i, end = 4, struct.unpack_from("<i", doc)[0] - 1
    while i < end:
        kind = doc[i]
        j = doc.index(b"\0", i + 1)
        name, i = doc[i + 1 : j].decode("utf-8", "replace"), j + 1
        if kind == 0x01:
            out[name] = struct.unpack_from("<d", doc, i)[0]
        elif kind == 0x10:
            out[name] = struct.unpack_from("<i", doc, i)[0]
        elif kind == 0x12:
            out[name] = struct.unpack_from("<q", doc, i)[0]
        elif kind == 0x08:
            out[name] = doc[i] == 1
        elif kind == 0x02:
            n = struct.unpack_from("<i", doc, i)[0]
            out[name] = doc[i + 4 : i + 3 + n].decode("utf-8", "replace")
            i += 4 + n
            continue
        if kind in _BSON_FIXED:
            i += _BSON_FIXED[kind]
        elif kind in (0x03, 0x04):
            i += struct.unpack_from("<i", doc, i)[0]
        elif kind == 0x05:
            i += 5 + struct.unpack_from("<i", doc, i)[0]
        else:
            break  # a type a ping's reply does not carry at the top: what came before is enough
    return out


OP_MSG = 2013


def mongodb_probe(host: str, port: int):
    """MongoDB's `ping` (allowed without authentication) in the wire protocol's OP_MSG."""

    def probe(timeout: float) -> str:
        doc = bson_doc({"ping": 1, "$db": "admin"})
        msg = struct.pack("<iiii", 16 + 4 + 1 + len(doc), 1, 0, OP_MSG) + struct.pack("<I", 0) + b"\0" + doc
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(msg)
            header = struct.unpack("<iiii", _recv_exactly(s, 16))
            length, opcode = header[0], header[3]
            if opcode != OP_MSG or not 21 < length < 16 * 1024 * 1024:
                raise Unhealthy(f"answered, but not in MongoDB's protocol (opcode {opcode})")
            reply = _recv_exactly(s, length - 16)
        if reply[4] != 0:
            raise Unhealthy("an OP_MSG reply without a body section")
        fields = bson_top_level(reply[5:])
        if fields.get("ok") not in (1, 1.0, True):
            raise Unhealthy(f"ping answered ok={fields.get('ok')}: {fields.get('errmsg', '')}".rstrip(": "))
        return "ping ok"

    return probe


# ---------------------------------------------------------------------------------------------
# the node's parts


def node_parts(function: str = FUNCTION, host: str = HOST, ports: dict | None = None) -> list[Part]:
    """Every part a node may run, in the order they are listed (ports: overrides for tests)."""
    p = {"gateway": 8080, "listener": 8091, "agent": 7070, "database": 27017, "registry": 5000, **(ports or {})}
    urls = {
        "gateway": f"http://{host}:{p['gateway']}/healthz",
        "function": f"http://{host}:{p['gateway']}/function/{function}/readyz",
        "listener": f"http://{host}:{p['listener']}/readyz",
        "registry": f"http://{host}:{p['registry']}/v2/",
    }
    return [
        Part("gateway", "gateway", f"GET {urls['gateway']}", http_probe(urls["gateway"])),
        Part("function", None, f"GET {urls['function']}", http_probe(urls["function"])),
        Part("listener", "listener", f"GET {urls['listener']}", http_probe(urls["listener"])),
        Part("agent", "miso-agent", f"gRPC {host}:{p['agent']}", h2_probe(host, p["agent"])),
        Part("database", "mongodb", f"ping {host}:{p['database']}", mongodb_probe(host, p["database"])),
        Part("registry", "registry", f"GET {urls['registry']}", http_probe(urls["registry"], (200, 401))),
    ]


COMPOSE_SERVICE = re.compile(r"^  ([A-Za-z0-9][A-Za-z0-9_.-]*):\s*$")


def compose_services(path: str = COMPOSE) -> set[str] | None:
    """The service names of faasd's docker-compose.yaml (node_stack.py renders it: two-space
    indent), or None when it cannot be read (then every part is checked)."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    names, inside = set(), False
    for line in lines:
        if line and not line.startswith((" ", "#")):
            inside = line.rstrip() == "services:"
        elif inside and (m := COMPOSE_SERVICE.match(line)):
            names.add(m.group(1))
    return names


def present(parts: list[Part], services: set[str] | None) -> list[Part]:
    return [p for p in parts if services is None or p.service is None or p.service in services]


# ---------------------------------------------------------------------------------------------
# the check


def check(parts: list[Part], timeout: float = TIMEOUT_S) -> dict:
    """Every part at once, each within `timeout`: {ok, failing, parts: [{name, ok, latency_ms, detail}], ...}."""
    t0 = time.monotonic()

    def one(part: Part) -> dict:
        start = time.monotonic()
        try:
            detail, ok = part.probe(timeout), True
        except Unhealthy as err:
            detail, ok = str(err), False
        except (OSError, http.client.HTTPException, ValueError, struct.error) as err:
            detail, ok = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__, False
        latency = round((time.monotonic() - start) * 1000, 1)
        return {"name": part.name, "ok": ok, "latency_ms": latency, "detail": f"{part.target}: {detail}"}

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(parts)), thread_name_prefix="health")
    futures = [pool.submit(one, p) for p in parts]
    concurrent.futures.wait(futures, timeout=timeout + 0.3)
    pool.shutdown(wait=False)
    results = []
    for part, fut in zip(parts, futures, strict=True):
        if fut.done():
            results.append(fut.result())
        else:  # a probe that overran its own socket timeout (name resolution, a stuck read)
            detail = f"{part.target}: no answer within {timeout:g} s"
            results.append({"name": part.name, "ok": False, "latency_ms": round(timeout * 1000, 1), "detail": detail})
    failing = [r["name"] for r in results if not r["ok"]]
    return {
        "ok": not failing,
        "failing": failing,
        "parts": results,
        "checked_in_ms": round((time.monotonic() - t0) * 1000, 1),
        "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


class Checker:
    """One check at a time; a result younger than `cache_s` answers the next request too."""

    def __init__(self, parts_fn, timeout: float = TIMEOUT_S, cache_s: float = CACHE_S):
        self.parts_fn, self.timeout, self.cache_s = parts_fn, timeout, cache_s
        self.lock = threading.Lock()
        self.last: tuple[float, dict] | None = None

    def __call__(self) -> dict:
        with self.lock:
            if self.last and time.monotonic() - self.last[0] < self.cache_s:
                return self.last[1]
            result = check(self.parts_fn(), self.timeout)
            self.last = (time.monotonic(), result)
            return result


def node_checker() -> Checker:
    return Checker(lambda: present(node_parts(), compose_services()))


# ---------------------------------------------------------------------------------------------
# the health URL


def handler(respond):
    """A request handler class: GET / or /health answers respond() -> (code, doc) as JSON."""

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            if self.path.split("?")[0] not in ("/", "/health"):
                self.answer(404, {"error": f"no endpoint at GET {self.path.split('?')[0]}", "allowed": ["GET /health"]})
                return
            self.answer(*respond())

        def answer(self, code: int, doc: dict) -> None:
            body = (json.dumps(doc, indent=2) + "\n").encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("cache-control", "no-store")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):  # noqa: A002 (http.server's signature)
            pass

    return Health


def node_response(checker) -> tuple[int, dict]:
    doc = checker()
    return (200 if doc["ok"] else 503), doc


def serve(respond, port: int = PORT, host: str = "0.0.0.0") -> int:
    server = http.server.ThreadingHTTPServer((host, port), handler(respond))
    server.daemon_threads = True
    server.serve_forever()
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="node_health.py", description=__doc__.split("\n\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("serve", help="serve GET /health").add_argument("--port", type=int, default=PORT)
    sub.add_parser("check", help="check once, print the JSON, exit 0 when healthy")
    args = parser.parse_args(argv)
    checker = node_checker()
    if args.cmd == "check":
        doc = checker()
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return 0 if doc["ok"] else 1
    return serve(lambda: node_response(checker), args.port)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
