#!/usr/bin/env python3
"""Runs on a lab node (test-lab.sh sends it with Ansible's script module): kill -9 of each service
in turn; the node's health URL must answer 503 naming it within 10 s, and 200 once it is back.

faasd's restart policy (our patch 0001) brings a compose service back within 250 ms of its first
death, sooner than some answers change: the service's process is killed again whenever it runs
(kill -9, backing faasd's restart off 250 ms, 500 ms, 1 s, ...) until the health URL names it,
for at most 10 s. Then nothing is killed any more and every part must be healthy again: faasd
restarts the services; the function (not a compose service) comes back through the gateway's
scale-from-zero, or the test scales it to 1 replica itself after 30 s. Prints a table; exit 1 on a failure.

Env: HEALTH_URL (http://127.0.0.1:8099/health), HEALTH_NAMED_S (10), HEALTH_BACK_S (240).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

URL = os.environ.get("HEALTH_URL", "http://127.0.0.1:8099/health")
NAMED_S = float(os.environ.get("HEALTH_NAMED_S", "10"))
BACK_S = float(os.environ.get("HEALTH_BACK_S", "240"))
GATEWAY = "http://127.0.0.1:8080"
SECRETS = "/var/lib/faasd/secrets"
# part -> (containerd namespace, task name); the database last: the others depend on it
PARTS = [
    ("registry", "openfaas", "registry"),
    ("agent", "openfaas", "miso-agent"),
    ("listener", "openfaas", "listener"),
    ("function", "openfaas-fn", "syncmesh-fn"),
    ("gateway", "openfaas", "gateway"),
    ("database", "openfaas", "mongodb"),
]


def health() -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(URL, timeout=5) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as err:
        try:
            return err.code, json.load(err)
        except ValueError:
            return err.code, {}
    except (OSError, ValueError) as err:
        return 0, {"error": str(err)}


def running_pids(namespace: str, task: str) -> list[int]:
    """PIDs of the task's running containers (a function may have `<name>.<generation>` beside `<name>`)."""
    out = subprocess.run(["ctr", "-n", namespace, "tasks", "ls"], capture_output=True, text=True, check=True).stdout
    pids = []
    for line in out.splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 3 and (cols[0] == task or cols[0].startswith(task + ".")) and cols[2] == "RUNNING":
            pids.append(int(cols[1]))
    return pids


def scale_function(name: str) -> str:
    def secret(n: str) -> str:
        with open(f"{SECRETS}/{n}", encoding="utf-8") as f:
            return f.read().strip()

    auth = base64.b64encode(f"{secret('basic-auth-user')}:{secret('basic-auth-password')}".encode()).decode()
    req = urllib.request.Request(
        f"{GATEWAY}/system/scale-function/{name}",
        data=json.dumps({"serviceName": name, "replicas": 1}).encode(),
        headers={"authorization": f"Basic {auth}", "content-type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return f"HTTP {r.status}"
    except (OSError, urllib.error.HTTPError) as err:
        return str(err)


def one(part: str, namespace: str, task: str) -> dict:
    t0 = time.monotonic()
    kills, named_s, failing = 0, None, []
    while time.monotonic() - t0 < NAMED_S:
        for pid in running_pids(namespace, task):
            try:
                os.kill(pid, signal.SIGKILL)
                kills += 1
            except ProcessLookupError:
                pass
        code, doc = health()
        if code == 503 and part in doc.get("failing", []):
            named_s, failing = time.monotonic() - t0, doc["failing"]
            break
        time.sleep(0.2)
    row = {"part": part, "kills": kills, "named_s": named_s, "failing": failing, "back_s": None, "scaled": ""}
    if named_s is None:
        return row
    t1, last = time.monotonic(), {}
    while time.monotonic() - t1 < BACK_S:
        code, last = health()
        if code == 200:
            row["back_s"] = time.monotonic() - t0
            return row
        if part == "function" and not row["scaled"] and time.monotonic() - t1 > 30:
            row["scaled"] = scale_function(task)
        time.sleep(0.5)
    row["last"] = last
    return row


def main() -> int:
    code, doc = health()
    if code != 200:
        print(f"health-kill: the node is not healthy before the test: HTTP {code} {json.dumps(doc)[:2000]}")
        return 1
    print(f"health-kill: {URL}: 200, parts {[p['name'] for p in doc['parts']]}, checked in {doc['checked_in_ms']} ms")
    rows, ok = [], True
    for part, namespace, task in PARTS:
        row = one(part, namespace, task)
        rows.append(row)
        good = row["named_s"] is not None and row["back_s"] is not None
        ok = ok and good
        print(f"health-kill: {part}: {'ok' if good else 'FAILED'} {json.dumps(row)}", flush=True)
        if not good:
            break
    print("\n| part killed | kill -9 sent | 503 naming it after (s) | failing parts then | 200 again after (s) |")
    print("| --- | ---: | ---: | --- | ---: |")
    for r in rows:
        named = f"{r['named_s']:.1f}" if r["named_s"] is not None else f"not within {NAMED_S:g}"
        back = f"{r['back_s']:.1f}" if r["back_s"] is not None else "-"
        back += f" (scaled: {r['scaled']})" if r["scaled"] else ""
        print(f"| {r['part']} | {r['kills']} | {named} | {', '.join(r['failing'])} | {back} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
