"""syncmesh-node.service (`up`): the node from its validated settings (node.json): node-prepare.sh
and node-import.sh, containerd and faasd, the function deployed from the node description, then
the node and its peers in its registry. Every step is idempotent; systemd retries a failure."""

from __future__ import annotations

import json
import os
import re
import shutil
import time

import nodefile

from . import database
from .common import (
    AGENT_PORT,
    BOOT_STAMP,
    FUNCTION,
    GATEWAY,
    HEALTH_PORT,
    LIB,
    NODE_JSON,
    NODE_STATE,
    REGISTRY_PASSWORD,
    SECRETS,
    START_ERROR,
    STATE,
    http_ok,
    log,
    read_text,
    sh,
    uptime_s,
    wait_for,
    write_file,
)
from .gateway import Gateway, deploy_functions
from .registry_client import function_url, meta, sync_registry
from .status import DATABASE_TEST, console, database_info, write_status


def primary_address() -> str | None:
    out = sh("ip", "-4", "-o", "addr", "show", "scope", "global", check=False).stdout
    m = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", out)
    return m.group(1) if m else None


def up() -> int:
    if not os.path.exists(NODE_JSON):
        log("no valid node file: the node does not start (see the health URL)")
        return 0
    with open(NODE_JSON, encoding="utf-8") as f:
        node = json.load(f)
    nid = node["node_id"]
    t_boot = float(read_text(BOOT_STAMP)) if os.path.exists(BOOT_STAMP) else 0.0
    try:
        return start_node(node, nid, t_boot)
    except Exception as err:  # reported where the operator looks; systemd restarts the unit
        write_status(state="failed", ready=False, message=f"{START_ERROR}: {err}")
        log(f"{START_ERROR}: {err}")
        console([f"{START_ERROR}: node {nid} failed to start: {err}", "it is retried; journalctl -u syncmesh-node shows the steps"])
        return 1


def function_values(node: dict, nid: str) -> dict:
    """The node description's function inputs from the node file (peer_timeout_s: each peer's
    answer; the whole fan-out 5 s more, at least 25 s; a whole request at least the deadline + 5 s
    and 20 s; the watchdog 5 s beyond the request), as scenarios/mesh's stackVars and the Ansible
    syncmesh_node role compute them."""
    node_timeout_ms = int(node.get("peer_timeout_s", nodefile.PEER_TIMEOUT_S_DEFAULT)) * 1000
    deadline_ms = max(25000, node_timeout_ms + 5000)
    request_deadline_ms = int(os.environ.get("SYNCMESH_REQUEST_DEADLINE_MS", str(max(20000, deadline_ms + 5000))))
    return {
        "FUNCTION_IMAGE": read_text(f"{NODE_STATE}/function-image"),
        "NODE_ID": nid,
        "NODE_TIMEOUT_MS": str(node_timeout_ms),
        "DEADLINE_MS": str(deadline_ms),
        "REQUEST_DEADLINE_MS": str(request_deadline_ms),
        "REPLAY_WINDOW_MS": os.environ.get("SYNCMESH_REPLAY_WINDOW_MS", "30000"),
        "WATCHDOG_TIMEOUT": f"{-(-(request_deadline_ms + 5000) // 1000)}s",
        "FORWARD_MODE": os.environ.get("SYNCMESH_FORWARD_MODE", "parallel"),
        "LOG_LEVEL": node["log_level"],
    }


def prepare(node: dict, nid: str, address: str) -> tuple[dict, bool]:
    """node-prepare.sh with this node's settings (the node description's compose file, secrets,
    folders, image list); the database's kind, and whether it is MongoDB's official image."""
    env = {
        "NODE_STATE": NODE_STATE,
        "NODE_ID": nid,
        "NODE_ADDR": address,
        "MISO_PEERS": ",".join(f"{p['id']}@{p['host']}:{AGENT_PORT}" for p in node["peers"]),
        "MESH_SECRET_FILE": f"{SECRETS}/mesh-secret",
        "WRITE_KEY_FILE": f"{SECRETS}/write-key",
        "MONGODB_PUBLISH": node["mongodb_publish"],
        "LOG_LEVEL": node["log_level"],
        "IMAGES_DIR": f"{LIB}/images",
        "FAASD_BIN": f"{LIB}/bin/faasd",
        "NODE_DESCRIPTION": f"{LIB}/node/node.yml",
        "NODE_STACK": f"{LIB}/python/node_stack.py",
    }
    if os.path.exists(f"{LIB}/images/preloaded.json"):  # images/appliance/preload.sh
        env["IMAGES_PRELOADED"] = "1"
    if os.path.exists(REGISTRY_PASSWORD):  # the node file's registry_password (configure)
        env["REGISTRY_PASSWORD_FILE"] = REGISTRY_PASSWORD
    db = database_info()
    official = db.get("kind") == "mongodb"  # images/appliance/mongo-image.sh: MONGO_IMAGE was given
    if official:
        problem = database.cpu_problem(db, sh("dpkg", "--print-architecture").stdout.strip())
        if problem:
            raise RuntimeError(f"{db['image']}: {problem}; rebuild the image with another MONGO_IMAGE")
        env["MONGODB_VARIANT"] = "official"
        env["MONGODB_COMPOSE_OVERRIDES"] = f"{LIB}/node/mongodb-official.yaml"
    r = sh("bash", f"{LIB}/node/node-prepare.sh", env=env, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"node-prepare.sh: {r.stderr.strip()[-400:]}")
    # faasd's files: /etc/resolv.conf for functions (the stub resolver's address is not reachable from containers)
    resolv = f"{STATE}/resolv.conf" if os.path.exists(f"{STATE}/resolv.conf") else "/run/systemd/resolve/resolv.conf"
    if os.path.exists(resolv):
        shutil.copyfile(resolv, f"{NODE_STATE}/var-lib-faasd/resolv.conf")
    else:  # functions bind-mount it: it must exist (as the Ansible role's default)
        write_file(f"{NODE_STATE}/var-lib-faasd/resolv.conf", "nameserver 127.0.0.1\n")
    return db, official


def registry_status(address: str) -> dict:
    """Where the node's registry password came from (never the password): the node file's, or the
    node's own, generated once on the node and kept (the operator reads it from NODE_STATE/registry-auth)."""
    given = os.path.exists(REGISTRY_PASSWORD)
    return {
        "address": f"{address}:5000",
        "password": "given" if given else "generated",
        "message": "the registry's password is the node file's registry_password"
        if given
        else f"the node file gives no registry_password: the node generated one (root-only {NODE_STATE}/registry-auth, user:password)",
    }


def start_faasd(db: dict, official: bool) -> None:
    """containerd, the images (imported once, or preloaded), faasd; the official database's replica set."""
    preloaded = os.path.exists(f"{LIB}/images/preloaded.json")
    write_status(message="starting containerd" + ("" if preloaded else " and importing the bundled images (first boot: a few minutes)"))
    sh("systemctl", "start", "containerd.service")
    wait_for("containerd", lambda: sh("ctr", "version", check=False).returncode == 0, 120)
    if official and db.get("source") == "pull":
        database.pull_image(db["image"], sh("dpkg", "--print-architecture").stdout.strip())
    t0 = time.monotonic()
    r = sh("bash", f"{LIB}/node/node-import.sh", f"{NODE_STATE}/images.list", check=False, timeout=3600)
    log(r.stdout.strip())
    if r.returncode != 0:
        raise RuntimeError(f"image import failed: {(r.stdout + r.stderr).strip()[-400:]}")
    log(f"images present after {time.monotonic() - t0:.0f} s")
    write_status(message="starting faasd")
    sh("systemctl", "start", "faasd-provider.service", "faasd.service")
    wait_for("the gateway", lambda: http_ok(f"{GATEWAY}/healthz"), 900)
    if official:
        write_status(message="initiating MongoDB's replica set")
        database.initiate_replica_set(db)


def start_node(node: dict, nid: str, t_boot: float) -> int:
    address = node["address"]
    if not address:
        write_status(state="starting", message="waiting for a network address")
        wait_for("a global IPv4 address", lambda: primary_address() is not None, 600)
        address = primary_address()
    write_status(state="starting", node_id=nid, address=address, message="preparing the node", ready=False)
    first = not os.path.exists(f"{NODE_STATE}/var-lib-faasd/secrets/basic-auth-password")
    peers = node["peers"]
    db, official = prepare(node, nid, address)
    write_status(registry=registry_status(address))
    start_faasd(db, official)
    auth = read_text(f"{NODE_STATE}/basic-auth")
    gw = Gateway(auth)
    wait_for("the gateway's API", lambda: gw.request("GET", "/system/functions")[0] == 200, 600)
    write_status(message="deploying the function")
    deploy_functions(gw, f"{LIB}/node/node.yml", function_values(node, nid), f"{NODE_STATE}/var-lib-faasd/secrets")
    wait_for("the function", lambda: http_ok(f"{GATEWAY}/function/{FUNCTION}/readyz"), 900)
    secret = read_text(f"{SECRETS}/mesh-secret")
    own_url = f"{GATEWAY}/function/{FUNCTION}"
    me = {"id": nid, "address": function_url(address), "lat": node["lat"], "lon": node["lon"], "own_node": True}
    write_status(message="registering itself in its registry")
    sync_registry(own_url, secret, nid, [me])
    ready_s = uptime_s()
    write_status(
        state="ready",
        ready=True,
        message="node ready; registering peers" if peers else "node ready",
        gateway_url=f"http://{address}:8080",
        function_url=function_url(address),
        boot_to_ready_s=round(ready_s, 1),
        peers={p["id"]: "pending" for p in peers},
    )
    banner = [
        f"node {nid} READY in {ready_s:.0f} s after boot (kernel start); configured at {t_boot:.0f} s",
        f"gateway   http://{address}:8080  (user admin; password: root-only file {NODE_STATE}/basic-auth)",
        f"function  {function_url(address)}",
        f"health    http://{address}:{HEALTH_PORT}/health",
    ]
    if db.get("kind") == "test-server":
        banner.append(DATABASE_TEST["warning"])
    if first:
        banner.append(f"gateway basic auth (shown once, here only): {auth}")
    console(banner)
    log(f"node {nid} ready {ready_s:.0f} s after boot")
    register_peers(nid, secret, own_url, me, peers)
    return 0


def register_peers(nid: str, secret: str, own_url: str, me: dict, peers: list[dict]) -> None:
    """Each peer's location comes from itself (ownNode); retried until every peer answered."""
    pending = {p["id"]: p for p in peers}
    known = [me]
    while pending:
        for pid, p in list(pending.items()):
            try:
                own = meta(function_url(p["host"]), secret, nid, pid, "{ ownNode { id lat lon } }").get("ownNode")
            except (OSError, RuntimeError, ValueError) as err:
                log(f"peer {pid} at {p['host']}: not yet ({err})")
                continue
            if not own or own.get("id") != pid:
                log(f"peer {pid} at {p['host']}: answered as {own and own.get('id')}; waiting")
                continue
            known.append({"id": pid, "address": function_url(p["host"]), "lat": own["lat"], "lon": own["lon"]})
            sync_registry(own_url, secret, nid, known)
            del pending[pid]
            write_status(peers={q["id"]: ("pending" if q["id"] in pending else "registered") for q in peers})
            log(f"peer {pid} registered")
        if pending:
            time.sleep(5)
    write_status(message="node ready; all peers registered", peers_registered_s=round(uptime_s(), 1))
    console([f"node {nid}: all {len(peers)} peers registered"])
