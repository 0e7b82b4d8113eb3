"""syncmesh-health.service: GET /health checks every service of the node now (node_health.py, the
checker the Ansible node serves too) and says the boot state beside it: 200 when the node has
booted and every part is healthy; 503 while it boots (failing: "boot") or when a part fails
(failing names it). The format: docs/guides/operate.md ("Health URL")."""

from __future__ import annotations

import node_health  # the checker, from the Ansible collection (payload.sh copies it)

from .common import HEALTH_PORT
from .status import database_info, read_status


def booting() -> dict:
    return {"state": "booting", "ready": False, "message": "the node has not read its node file yet", "database": database_info()}


def respond(checker, status_fn=read_status) -> tuple[int, dict]:
    """The boot status file's fields (state, ready, message, node_id, ...) and the check's."""
    status = status_fn() or booting()
    doc = {**status, **checker()}
    if not status.get("ready"):
        doc["failing"] = ["boot", *doc["failing"]]
        doc["ok"] = False
    return (200 if doc["ok"] else 503), doc


def serve(port: int = HEALTH_PORT) -> int:
    checker = node_health.node_checker()
    return node_health.serve(lambda: respond(checker), port)
