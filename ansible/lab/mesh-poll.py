#!/usr/bin/env python3
"""Asks the mesh for its aggregate through every node of a topology.json, round robin, about once a
second, until SIGTERM/SIGINT; then prints one JSON line: how many answers were full, partial
(a node did not answer; the answering node names it) or failed (the node asked did not answer), per
node asked, and the longest stretch in which no node gave a full answer. test-lab runs it while
syncmesh.edge.upgrade restarts the nodes one at a time.

    mesh-poll.py TOPOLOGY_JSON [INTERVAL_S (1.0)]
"""

import json
import signal
import sys
import time
import urllib.error
import urllib.request

topology = json.load(open(sys.argv[1]))
interval = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
nodes = topology["nodes"]
body = json.dumps({"query": "{ sensorsAggregate { count } }", "request_type": "aggregate", "use_meta_data": True}).encode()
stop = False


def on_signal(_sig, _frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)
per_node = {n["id"]: {"full": 0, "partial": 0, "failed": 0} for n in nodes}
totals = {"full": 0, "partial": 0, "failed": 0}
last_full = start = time.monotonic()
longest_without_full = 0.0
i = 0
while not stop:
    node = nodes[i % len(nodes)]
    i += 1
    t0 = time.monotonic()
    try:
        req = urllib.request.Request(node["function_url"], data=body, headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as res:
            answer = json.load(res)
        outcome = "partial" if answer.get("extensions", {}).get("partial") else "full"
    except (urllib.error.URLError, OSError, ValueError):
        outcome = "failed"
    now = time.monotonic()
    per_node[node["id"]][outcome] += 1
    totals[outcome] += 1
    if outcome == "full":
        last_full = now
    longest_without_full = max(longest_without_full, now - last_full)
    time.sleep(max(0.0, interval - (time.monotonic() - t0)))
print(
    json.dumps(
        {
            "seconds": round(time.monotonic() - start, 1),
            "requests": i,
            **totals,
            "longest_without_full_answer_s": round(longest_without_full, 1),
            "per_node": per_node,
        }
    )
)
