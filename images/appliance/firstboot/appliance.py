#!/usr/bin/python3
"""The Syncmesh Edge appliance's boot program (installed as /usr/lib/syncmesh/appliance.py; its
modules in boot/ beside it, one per concern: see boot/__init__.py).

  appliance.py configure   early boot (syncmesh-configure.service, before the network): find the
                           node file, validate it, apply host name, network, Wi-Fi and SSH keys;
                           write /run/syncmesh/node.json for `up`, or say on the console and at
                           the health URL why the node does not join
  appliance.py up          syncmesh-node.service: the node (images/node/node-prepare.sh and
                           node-import.sh, containerd + faasd units, secrets, function, registry)
  appliance.py health      syncmesh-health.service: GET /health on HEALTH_PORT checks every service now
  appliance.py validate F  check a node file, print every problem (exit 1) or the summary (exit 0)

Every step is idempotent, and every boot runs them all: editing the node file and rebooting
applies it. Secrets never reach the journal: the gateway password is written to the console
device only (first boot) and to a root-only file.
"""

from __future__ import annotations

import hashlib
import os
import sys

# the collection's module_utils (mesh_auth, registry, mongodb_cpu, node_stack, node_health): payload.sh copies them here
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))

import nodefile  # noqa: E402
from boot import configure, health, node  # noqa: E402


def validate_cmd(path: str) -> int:
    try:
        cfg = nodefile.load(path)
    except nodefile.NodeFileError as err:
        for p in err.problems:
            print(f"{path}: {p}")
        return 1
    print(
        f"{path}: valid: node {cfg.node_id} at {cfg.lat},{cfg.lon}, {len(cfg.peers)} peers, "
        f"secret sha256 {hashlib.sha256(cfg.mesh_secret.encode()).hexdigest()[:12]}"
    )
    return 0


def main(argv: list[str]) -> int:
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "configure":
        return configure.configure()
    if cmd == "up":
        return node.up()
    if cmd == "health":
        return health.serve()
    if cmd == "validate" and len(argv) == 3:
        return validate_cmd(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
