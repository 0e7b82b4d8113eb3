"""Where the operator looks: the status file (the health URL serves it), the console and the login prompt."""

from __future__ import annotations

import json
import os
import time

from .common import HEALTH_PORT, LIB, RUN, STATUS_FILE

DATABASE_TEST = {
    "kind": "test-server",
    "warning": "TEST-ONLY: this image runs the MongoDB-compatible test server (mongo-java-server), not MongoDB; "
    "build with MONGO_IMAGE=... for the official image",
}


def console(lines: list[str]) -> None:
    """Writes straight to the console device (not the journal): where the operator looks first."""
    text = "\n".join(["", "=" * 72, *[f" syncmesh: {line}" for line in lines], "=" * 72, ""]) + "\n"
    try:
        with open("/dev/console", "w", encoding="utf-8") as f:
            f.write(text.replace("\n", "\r\n"))
    except OSError:
        pass


def database_info() -> dict:
    """Which database the image runs (payload.sh writes database.json)."""
    try:
        with open(f"{LIB}/database.json", encoding="utf-8") as f:
            return json.load(f)
    except OSError:
        return DATABASE_TEST


def read_status() -> dict | None:
    try:
        with open(STATUS_FILE, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_status(**fields) -> dict:
    os.makedirs(RUN, exist_ok=True)
    status = read_status() or {}
    status.update(fields)
    status["database"] = database_info()
    status["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    tmp = STATUS_FILE + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(status, f, indent=2)
    os.replace(tmp, STATUS_FILE)
    # the login prompt shows the state too (agetty reads /run/issue.d, /etc/issue.d)
    os.makedirs("/run/issue.d", exist_ok=True)
    with open("/run/issue.d/50-syncmesh.issue", "w", encoding="utf-8") as f:
        f.write(f"syncmesh node {status.get('node_id') or '?'}: {status.get('state')} - {status.get('message', '')}\n")
        f.write(f"health: http://<this node>:{HEALTH_PORT}/health\n\n")
    return status
