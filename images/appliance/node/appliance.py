#!/usr/bin/python3
"""The Syncmesh Edge appliance's boot program (installed as /usr/lib/syncmesh/appliance.py).

  appliance.py configure   early boot (syncmesh-configure.service, before the network): find the
                           node file, validate it, apply host name, network, Wi-Fi and SSH keys;
                           write /run/syncmesh/node.json for `up`, or say on the console and at
                           the health URL why the node does not join
  appliance.py up          syncmesh-node.service: the node (images/node/node-prepare.sh and
                           node-import.sh, containerd + faasd units, secrets, function, registry)
  appliance.py health      syncmesh-health.service: GET /health on HEALTH_PORT answers the status
  appliance.py validate F  check a node file, print every problem (exit 1) or the summary (exit 0)

Every step is idempotent, and every boot runs them all: editing the node file and rebooting
applies it. Secrets never reach the journal: the gateway password is written to the console
device only (first boot) and to a root-only file.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python"))

import mesh_auth  # noqa: E402  (lib/mesh-auth protocol v2, from the Ansible collection)
import mongodb_cpu  # noqa: E402  (which MongoDB a CPU runs, from the Ansible collection)
import nodefile  # noqa: E402
import registry  # noqa: E402  (registry diff, from the Ansible collection)
import yaml  # noqa: E402

LIB = os.environ.get("SYNCMESH_LIB", "/usr/lib/syncmesh")
NODE_FILE_CLOUD = "/etc/syncmesh/syncmesh-node.yaml"  # cloud-init write_files (wins)
NODE_FILE_BOOT = "/boot/efi/syncmesh-node.yaml"  # the boot partition (VM: the ESP)
CLOUD_USER_DATA = "/var/lib/cloud/instance/user-data.txt"
RUN = "/run/syncmesh"
STATUS_FILE = f"{RUN}/status.json"
NODE_JSON = f"{RUN}/node.json"
STATE = "/var/lib/syncmesh"
NODE_STATE = f"{STATE}/node"
SECRETS = f"{STATE}/secrets"
HEALTH_PORT = int(os.environ.get("SYNCMESH_HEALTH_PORT", "8099"))
GATEWAY = "http://127.0.0.1:8080"
FUNCTION = "syncmesh-fn"
AGENT_PORT = 7070
BOOT_STAMP = f"{RUN}/boot-monotonic"
# error codes (docs/errors.md)
NODE_FILE_ERROR = "EDGE_APPLIANCE_NODE_FILE"
START_ERROR = "EDGE_APPLIANCE_START"
DATABASE_TEST = {
    "kind": "test-server",
    "warning": "TEST-ONLY: this image runs the MongoDB-compatible test server (mongo-java-server), not MongoDB; "
    "build with MONGO_IMAGE=... for the official image",
}


# ---------------------------------------------------------------------------------------------
# output: journal (stdout), console (the operator's screen / serial port), status file


def log(msg: str) -> None:
    print(msg, flush=True)


def console(lines: list[str]) -> None:
    """Writes straight to the console device (not the journal): where the operator looks first."""
    text = "\n".join(["", "=" * 72, *[f" syncmesh: {line}" for line in lines], "=" * 72, ""]) + "\n"
    try:
        with open("/dev/console", "w", encoding="utf-8") as f:
            f.write(text.replace("\n", "\r\n"))
    except OSError:
        pass


def database_info() -> dict:
    try:
        with open(f"{LIB}/database.json", encoding="utf-8") as f:
            return json.load(f)
    except OSError:
        return DATABASE_TEST


def write_status(**fields) -> dict:
    os.makedirs(RUN, exist_ok=True)
    try:
        with open(STATUS_FILE, encoding="utf-8") as f:
            status = json.load(f)
    except (OSError, ValueError):
        status = {}
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


def uptime_s() -> float:
    with open("/proc/uptime", encoding="utf-8") as f:
        return float(f.read().split()[0])


def sh(*argv: str, env: dict | None = None, check: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env={**os.environ, **(env or {})}, check=check, timeout=timeout, text=True, capture_output=True)


def write_file(path: str, content: str, mode: int = 0o644) -> bool:
    """Writes when different; True when it changed."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == content:
                os.chmod(path, mode)
                return False
    except OSError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(content)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
    return True


# ---------------------------------------------------------------------------------------------
# configure (early boot)


def node_file_from_cloud_init() -> None:
    """cloud-init's write_files runs after the network is up; the network may come from the node
    file, so its entry for NODE_FILE_CLOUD is applied here already (cloud-init writes the same later)."""
    try:
        with open(CLOUD_USER_DATA, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return
    if not text.startswith("#cloud-config"):
        return
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        log(f"cloud-init user-data is not YAML ({err}); ignored")
        return
    for entry in doc.get("write_files") or []:
        if isinstance(entry, dict) and entry.get("path") == NODE_FILE_CLOUD and isinstance(entry.get("content"), str):
            content = entry["content"]
            if entry.get("encoding") in ("b64", "base64"):
                content = base64.b64decode(content).decode()
            write_file(NODE_FILE_CLOUD, content, 0o600)


def boot_partition() -> str | None:
    """Partition 1 of the root's disk (the boot partition), from /sys: no udev links needed."""
    root = sh("findmnt", "-no", "SOURCE", "/", check=False).stdout.strip()
    part = os.path.basename(os.path.realpath(root)) if root else ""
    if not part or not os.path.exists(f"/sys/class/block/{part}/partition"):
        return None
    disk_dir = os.path.dirname(os.path.realpath(f"/sys/class/block/{part}"))
    for name in sorted(os.listdir(disk_dir)):
        try:
            with open(os.path.join(disk_dir, name, "partition"), encoding="utf-8") as f:
                if f.read().strip() == "1":
                    return f"/dev/{name}"
        except OSError:
            continue
    return None


def mount_boot_partition(timeout_s: float = 600) -> None:
    """The node file lives there: on a slow boot (TCG) fstab's mount may give up before udev is done."""
    if os.path.ismount(os.path.dirname(NODE_FILE_BOOT)):
        return
    deadline = time.monotonic() + timeout_s
    while True:
        dev = boot_partition()
        if dev and os.path.exists(dev):
            os.makedirs(os.path.dirname(NODE_FILE_BOOT), exist_ok=True)
            r = sh("mount", "-t", "vfat", "-o", "umask=0077", dev, os.path.dirname(NODE_FILE_BOOT), check=False)
            if r.returncode == 0:
                log(f"mounted the boot partition {dev} on {os.path.dirname(NODE_FILE_BOOT)}")
                return
            log(f"mounting {dev}: {r.stderr.strip()}")
        if time.monotonic() > deadline:
            log("no boot partition to mount")
            return
        time.sleep(3)


def find_node_file() -> str:
    node_file_from_cloud_init()
    if not os.path.exists(NODE_FILE_CLOUD):
        mount_boot_partition()
    return NODE_FILE_CLOUD if os.path.exists(NODE_FILE_CLOUD) else NODE_FILE_BOOT


def apply_access(access: nodefile.Access) -> None:
    """Host name, network, Wi-Fi, SSH keys: what keeps the node reachable."""
    if access.node_id:
        write_file("/etc/hostname", access.node_id + "\n")
        sh("hostname", access.node_id, check=False)
    net = access.network or nodefile.Network()
    lines = [
        "# written by syncmesh-configure from the node file; edit the node file, not this",
        "[Match]",
        f"Name={net.interface}",
        "",
        "[Network]",
    ]
    if net.address:
        lines.append(f"Address={net.address}")
        if net.gateway:
            lines.append(f"Gateway={net.gateway}")
    else:
        lines.append("DHCP=yes")
    lines += [f"DNS={d}" for d in net.dns]
    write_file("/etc/systemd/network/10-syncmesh.network", "\n".join(lines) + "\n")
    if net.address and net.dns:
        resolv = "".join(f"nameserver {d}\n" for d in net.dns)
    else:
        resolv = None
    if access.wifi:
        w = access.wifi
        write_file(
            "/etc/wpa_supplicant/wpa_supplicant-wlan0.conf",
            f'ctrl_interface=/run/wpa_supplicant\ncountry={w.country}\nnetwork={{\n  ssid="{w.ssid}"\n  psk="{w.psk}"\n}}\n',
            0o600,
        )
        write_file("/etc/systemd/network/20-syncmesh-wlan.network", "[Match]\nName=wlan0\n\n[Network]\nDHCP=yes\n")
        sh("systemctl", "enable", "--no-block", "wpa_supplicant@wlan0.service", check=False)
    keys = "".join(k + "\n" for k in access.ssh_authorized_keys)
    write_file("/etc/syncmesh/authorized_keys/root", keys, 0o644)
    if resolv:
        write_file(f"{STATE}/resolv.conf", resolv)


def configure() -> int:
    os.makedirs(RUN, exist_ok=True)
    write_file(BOOT_STAMP, f"{uptime_s()}\n")
    path = find_node_file()
    status = {"node_file": path, "ready": False, "peers": {}, "problems": []}
    try:
        with open(path, encoding="utf-8") as f:
            doc = nodefile.parse_yaml(f.read())
    except (OSError, nodefile.NodeFileError) as err:
        problems = err.problems if isinstance(err, nodefile.NodeFileError) else [f"cannot read {path}: {err}"]
        apply_access(nodefile.Access(None, None, [], None))
        return refuse(path, problems, status)
    apply_access(nodefile.access_of(doc))
    try:
        cfg = nodefile.validate(doc)
    except nodefile.NodeFileError as err:
        return refuse(path, err.problems, status, doc.get("node_id"))
    # the validated configuration for `up`, secrets in root-only files
    write_file(f"{SECRETS}/mesh-secret", cfg.mesh_secret, 0o600)
    write_file(f"{SECRETS}/write-key", cfg.write_key, 0o600)
    node = {
        "node_id": cfg.node_id,
        "lat": cfg.lat,
        "lon": cfg.lon,
        "address": cfg.address or (cfg.network.address.split("/")[0] if cfg.network.address else None),
        "peers": [{"id": p.id, "host": p.host} for p in cfg.peers],
        "mongodb_publish": cfg.mongodb_publish,
        "log_level": cfg.log_level,
        "peer_timeout_s": cfg.peer_timeout_s,
    }
    write_file(NODE_JSON, json.dumps(node, indent=2) + "\n", 0o600)
    write_status(state="configured", node_id=cfg.node_id, message="node file valid; starting the node", **status)
    log(f"node file {path}: valid (node {cfg.node_id}, {len(cfg.peers)} peers)")
    return 0


def refuse(path: str, problems: list[str], status: dict, node_id=None) -> int:
    if os.path.exists(NODE_JSON):
        os.remove(NODE_JSON)
    status["problems"] = problems
    write_status(
        state="invalid-node-file",
        node_id=node_id if isinstance(node_id, str) else None,
        message=f"the node file {path} is wrong; the node does not join the mesh until it is fixed (edit it and reboot)",
        **status,
    )
    for p in problems:
        log(f"{NODE_FILE_ERROR}: {path}: {p}")
    console(
        [
            f"{NODE_FILE_ERROR}: the node file {path} is wrong;",
            "this node does NOT join the mesh until it is fixed (edit it, then reboot):",
            *[f"  - {p}" for p in problems],
            f"SSH (by key) stays up; status: http://<this node>:{HEALTH_PORT}/health",
        ]
    )
    return 0


# ---------------------------------------------------------------------------------------------
# up: the node


class Gateway:
    """The node's own gateway API. While faasd starts (or restarts a core service) the gateway's
    published port can accept a connection and close it without an answer, or refuse it: such
    connection failures are retried for up to `retry_s` (an HTTP error status is an answer, and
    is returned). Deploys are never sent twice (see `deploy`)."""

    def __init__(
        self,
        auth: str,
        url: str = GATEWAY,
        retry_s: float = 120,
        pause_s: float = 2,
        state_dir: str = NODE_STATE,
        settle_s: float = 900,
    ):
        self.auth = "Basic " + base64.b64encode(auth.encode()).decode()
        self.url = url
        self.retry_s = retry_s
        self.pause_s = pause_s
        self.state_dir = state_dir
        self.settle_s = settle_s

    def _once(self, method: str, path: str, body, timeout: float) -> tuple[int, str]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method, headers={"authorization": self.auth})
        if data is not None:
            req.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(errors="replace")

    def request(self, method: str, path: str, body=None, timeout: float = 30) -> tuple[int, str]:
        deadline = time.monotonic() + self.retry_s
        while True:
            try:
                return self._once(method, path, body, timeout)
            except (OSError, http.client.HTTPException) as err:  # refused, reset, closed without an answer, timed out
                if time.monotonic() + self.pause_s > deadline:
                    raise RuntimeError(f"the gateway did not answer {method} {path} within {self.retry_s:.0f} s: {err}") from err
                log(f"gateway: {method} {path}: {err}; retrying")
                time.sleep(self.pause_s)

    def upsert_secret(self, name: str, value: str) -> None:
        code, text = self.request("POST", "/system/secrets", {"name": name, "value": value})
        if code in (200, 201, 202):
            return
        code2, text2 = self.request("PUT", "/system/secrets", {"name": name, "value": value})
        if not 200 <= code2 < 300:
            raise RuntimeError(f"the gateway refused secret {name}: HTTP {code} {text[:200]}; update: HTTP {code2} {text2[:200]}")

    def deploy(self, fn: dict) -> str:
        """Creates (POST) or updates (PUT) the function; "unchanged" when this very spec was sent
        before and the function exists (a restart after a slow first boot, a reboot without a
        node-file change). A deploy is sent once: on slow hardware the gateway gives up on it
        (its write_timeout, 60 s) while faasd goes on creating the function, and sending it again
        would start a second creation or update beside the first. So when the answer is lost, the
        function is polled until it exists (up to `settle_s`); its readiness is the caller's."""
        name = fn["service"]
        digest = hashlib.sha256(json.dumps(fn, sort_keys=True).encode()).hexdigest()
        sent_file = f"{self.state_dir}/deployed-{name}.sha256"
        exists = lambda: self.request("GET", f"/system/function/{name}")[0] == 200  # noqa: E731
        present = exists()
        if present and os.path.exists(sent_file):
            with open(sent_file, encoding="utf-8") as f:
                if f.read().strip() == digest:
                    return "unchanged"
        method = "PUT" if present else "POST"
        # recorded before sending: after a lost answer the function may exist from this request
        write_file(sent_file, digest + "\n", 0o600)
        try:
            code, text = self._once(method, "/system/functions", fn, timeout=120)
        except (OSError, http.client.HTTPException) as err:
            log(f"gateway: {method} /system/functions ({name}): {err}; not sent again, waiting for the function")
            if method == "PUT":
                # not known to be applied: the next start sends it again (the serving version
                # stays until a new one is ready, faasd patch 0004)
                os.remove(sent_file)
                return "update sent (its answer was lost)"
            deadline = time.monotonic() + self.settle_s
            while not exists():
                if time.monotonic() + self.pause_s > deadline:
                    os.remove(sent_file)
                    raise RuntimeError(
                        f"the gateway lost the answer to POST /system/functions ({err}) and {name} did not appear "
                        f"within {self.settle_s:g} s"
                    ) from err
                time.sleep(self.pause_s)
            return "created (its answer was lost; the function appeared)"
        if not 200 <= code < 300:
            os.remove(sent_file)
            raise RuntimeError(f"the gateway refused to deploy {name}: HTTP {code}: {text[:300]}")
        return "updated" if method == "PUT" else "created"


def http_ok(url: str, timeout: float = 3) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return 200 <= r.status < 300
    except (OSError, urllib.error.URLError):
        return False


def wait_for(what: str, probe, timeout_s: float) -> None:
    """Polls `probe` every 2 s; a probe that raises a connection error counts as "not yet"."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if probe():
                return
            last = "not yet"
        except (OSError, RuntimeError, http.client.HTTPException) as err:
            last = str(err)
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not answer within {timeout_s:.0f} s (last: {last})")
        time.sleep(2)


def render_stack(text: str, values: dict) -> list[dict]:
    """images/node/stack.yml (OpenFaaS's format) -> POST /system/functions bodies; an unknown ${NAME} is an error."""

    def sub(m: re.Match) -> str:
        if m.group(1) not in values:
            raise RuntimeError(f"stack.yml uses ${{{m.group(1)}}}, which is not set (known: {', '.join(sorted(values))})")
        return str(values[m.group(1)])

    stack = yaml.safe_load(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", sub, text))
    out = []
    for name, f in stack["functions"].items():
        body = {
            "service": name,
            "image": f["image"],
            "envVars": {k: str(v) for k, v in (f.get("environment") or {}).items()},
            "secrets": f.get("secrets") or [],
            "labels": f.get("labels") or {},
            "annotations": f.get("annotations") or {},
        }
        for k in ("limits", "requests"):
            if f.get(k):
                body[k] = f[k]
        out.append(body)
    return out


def meta(url: str, secret: str, origin: str, target: str, query: str, variables: dict | None = None, timeout: float = 10) -> dict:
    """A registry request to a node's function, signed (lib/mesh-auth v2) for `target`."""
    body = {"request_type": "meta", "query": query, **({"variables": variables} if variables else {})}
    data = json.dumps(body, separators=(",", ":")).encode()
    headers = {"content-type": "application/json", **mesh_auth.sign_v2(secret, "POST", "/", origin, target, data)}
    req = urllib.request.Request(url, data=data, method="POST", headers=headers)
    with urllib.request.urlopen(req, timeout=timeout) as r:
        answer = json.loads(r.read())
    if answer.get("errors"):
        raise RuntimeError(f"registry request to {url} was refused: {answer['errors'][0].get('message')}")
    return answer.get("data") or {}


def function_url(host: str) -> str:
    return f"http://{host}:8080/function/{FUNCTION}"


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
    t_boot = float(open(BOOT_STAMP, encoding="utf-8").read()) if os.path.exists(BOOT_STAMP) else 0.0
    try:
        return start_node(node, nid, t_boot)
    except Exception as err:  # reported where the operator looks; systemd restarts the unit
        write_status(state="failed", ready=False, message=f"{START_ERROR}: {err}")
        log(f"{START_ERROR}: {err}")
        console([f"{START_ERROR}: node {nid} failed to start: {err}", "it is retried; journalctl -u syncmesh-node shows the steps"])
        return 1


def start_node(node: dict, nid: str, t_boot: float) -> int:
    address = node["address"]
    if not address:
        write_status(state="starting", message="waiting for a network address")
        wait_for("a global IPv4 address", lambda: primary_address() is not None, 600)
        address = primary_address()
    write_status(state="starting", node_id=nid, address=address, message="preparing the node", ready=False)
    first = not os.path.exists(f"{NODE_STATE}/var-lib-faasd/secrets/basic-auth-password")
    peers = node["peers"]
    env = {
        "NODE_STATE": NODE_STATE,
        "NODE_ID": nid,
        "NODE_ADDR": address,
        "MISO_PEERS": ",".join(f"{p['id']}@{p['host']}:{AGENT_PORT}" for p in peers),
        "MESH_SECRET_FILE": f"{SECRETS}/mesh-secret",
        "MONGODB_PUBLISH": node["mongodb_publish"],
        "LOG_LEVEL": node["log_level"],
        "IMAGES_DIR": f"{LIB}/images",
        "FAASD_BIN": f"{LIB}/bin/faasd",
    }
    preloaded = os.path.exists(f"{LIB}/images/preloaded.json")  # images/appliance/preload.sh
    if preloaded:
        env["IMAGES_PRELOADED"] = "1"
    db = database_info()
    official = db.get("kind") == "mongodb"  # images/appliance/mongo-image.sh: MONGO_IMAGE was given
    if official:
        arch = sh("dpkg", "--print-architecture").stdout.strip()
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            problem = mongodb_cpu.cpu_problem(f.read(), arch, db["version"])
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
    write_status(message="starting containerd" + ("" if preloaded else " and importing the bundled images (first boot: a few minutes)"))
    sh("systemctl", "start", "containerd.service")
    wait_for("containerd", lambda: sh("ctr", "version", check=False).returncode == 0, 120)
    if official and db.get("source") == "pull":
        pull_image(db["image"], arch)
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
        initiate_replica_set(db)
    auth = open(f"{NODE_STATE}/basic-auth", encoding="utf-8").read().strip()
    gw = Gateway(auth)
    wait_for("the gateway's API", lambda: gw.request("GET", "/system/functions")[0] == 200, 600)
    gw.upsert_secret("mesh-secret", open(f"{SECRETS}/mesh-secret", encoding="utf-8").read().strip())
    gw.upsert_secret("write-key", open(f"{SECRETS}/write-key", encoding="utf-8").read().strip())
    # the function's MongoDB URI (stack.yml lists it; node-prepare.sh wrote the services' copy)
    gw.upsert_secret("mongodb-uri", open(f"{NODE_STATE}/var-lib-faasd/secrets/mongodb-uri", encoding="utf-8").read().strip())
    write_status(message="deploying the function")
    # the node file's peer_timeout_s: each peer's answer; the whole fan-out 5 s more (at least 25 s)
    node_timeout_ms = int(node.get("peer_timeout_s", nodefile.PEER_TIMEOUT_S_DEFAULT)) * 1000
    deadline_ms = max(25000, node_timeout_ms + 5000)
    request_deadline_ms = int(os.environ.get("SYNCMESH_REQUEST_DEADLINE_MS", str(max(20000, deadline_ms + 5000))))
    values = {
        "GATEWAY_URL": GATEWAY,
        "FUNCTION_IMAGE": open(f"{NODE_STATE}/function-image", encoding="utf-8").read().strip(),
        "NODE_ID": nid,
        "NODE_TIMEOUT_MS": str(node_timeout_ms),
        "DEADLINE_MS": str(deadline_ms),
        # a whole request, fan-out included (at least the deadline + 5 s, and 20 s), the accepted
        # clock difference of signed requests, and the watchdog 5 s beyond the request (as
        # scenarios/mesh's stackVars and the Ansible role's deployment.json.j2)
        "REQUEST_DEADLINE_MS": str(request_deadline_ms),
        "REPLAY_WINDOW_MS": os.environ.get("SYNCMESH_REPLAY_WINDOW_MS", "30000"),
        "WATCHDOG_TIMEOUT": f"{-(-(request_deadline_ms + 5000) // 1000)}s",
        "FORWARD_MODE": os.environ.get("SYNCMESH_FORWARD_MODE", "parallel"),
        "LOG_LEVEL": node["log_level"],
    }
    with open(f"{LIB}/node/stack.yml", encoding="utf-8") as f:
        for fn in render_stack(f.read(), values):
            log(f"{fn['service']}: {gw.deploy(fn)}")
    wait_for("the function", lambda: http_ok(f"{GATEWAY}/function/{FUNCTION}/readyz"), 900)
    secret = open(f"{SECRETS}/mesh-secret", encoding="utf-8").read().strip()
    own_url = f"{GATEWAY}/function/{FUNCTION}"
    me = {"id": nid, "address": function_url(address), "lat": node["lat"], "lon": node["lon"], "own_node": True}
    write_status(message="registering itself in its registry")
    sync_registry(own_url, secret, nid, [me])
    ready_s = uptime_s() - 0.0
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
    if database_info().get("kind") == "test-server":
        banner.append(DATABASE_TEST["warning"])
    if first:
        banner.append(f"gateway basic auth (shown once, here only): {auth}")
    console(banner)
    log(f"node {nid} ready {ready_s:.0f} s after boot")
    # peers: their location comes from themselves (ownNode); retried until every peer answered
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
    return 0


def pull_image(ref: str, arch: str, pause_s: float = 30) -> None:
    """The official MongoDB image, pulled once (MONGO_IMAGE=pull): retried until it succeeds,
    saying on the console and at the health URL that the node waits for internet access."""
    attempt = 0
    while ref not in sh("ctr", "-n", "openfaas", "images", "ls", "-q").stdout.split():
        attempt += 1
        write_status(message=f"pulling MongoDB's image {ref} (not bundled in this image; needs internet once), attempt {attempt}")
        t0 = time.monotonic()
        r = sh("ctr", "-n", "openfaas", "images", "pull", "--platform", f"linux/{arch}", ref, check=False, timeout=3600)
        if r.returncode == 0:
            log(f"pulled {ref} in {time.monotonic() - t0:.0f} s")
            break
        err = (r.stderr.strip() or r.stdout.strip() or f"exit {r.returncode}").splitlines()[-1][-300:]
        msg = (
            f"cannot pull MongoDB's image {ref} yet (attempt {attempt}): {err}; the node needs internet once, "
            f"or an image built with MONGO_IMAGE=<archive>; retrying every {pause_s:.0f} s"
        )
        write_status(message=msg)
        log(msg)
        if attempt == 1:
            console([msg])
        time.sleep(pause_s)


def initiate_replica_set(db: dict, within_s: float = 600, pause_s: float = 5) -> None:
    """The single-node replica set of the official image, initiated once (the Ansible mongodb role's
    rs-init.js, run in the mongodb container with its shell; credentials from its /run/secrets)."""
    shell = "mongo" if mongodb_cpu.major_version(db["version"]) < 5 else "mongosh"
    with open(f"{LIB}/node/mongodb-rs-init.js", encoding="utf-8") as f:
        script = f.read()
    deadline = time.monotonic() + within_s
    attempt = 0
    while True:
        attempt += 1
        r = sh(
            "ctr", "-n", "openfaas", "task", "exec", "--exec-id", f"rs-init-{os.getpid()}-{attempt}", "mongodb",
            shell, "--quiet", "--eval", script, check=False, timeout=120,
        )  # fmt: skip
        if r.returncode == 0 and "initiated" in r.stdout:
            log(f"MongoDB replica set: {r.stdout.strip().splitlines()[-1]}")
            return
        err = (r.stderr.strip() or r.stdout.strip() or f"exit {r.returncode}").splitlines()[-1][-300:]
        if time.monotonic() > deadline:
            raise RuntimeError(f"MongoDB's replica set was not initiated within {within_s:.0f} s: {err}")
        log(f"MongoDB replica set: not yet ({err})")
        time.sleep(pause_s)


def sync_registry(
    url: str, secret: str, nid: str, nodes: list[dict], within_s: float = 900, pause_s: float = 5, timeout_s: float = 60
) -> None:
    """Makes the node's own registry list `nodes`. Retried until it succeeds or `within_s` passes:
    a fresh function's first requests are slow on slow hardware (under software emulation more
    than 10 s), and each try lists the registry again, so a change that was applied before its
    answer was lost is not applied twice."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            current = meta(url, secret, nid, nid, registry.LIST_QUERY, timeout=timeout_s).get("nodes", [])
            for _, _, body in registry.plan_actions(current, nodes):
                meta(url, secret, nid, nid, body["query"], body.get("variables"), timeout=timeout_s)
            return
        except (OSError, RuntimeError, ValueError) as err:
            if time.monotonic() + pause_s > deadline:
                raise RuntimeError(f"the node's registry could not be updated within {within_s:g} s: {err}") from err
            log(f"registry: {err}; retrying")
            time.sleep(pause_s)


# ---------------------------------------------------------------------------------------------
# health


class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path not in ("/", "/health"):
            self.send_error(404, "GET /health")
            return
        try:
            with open(STATUS_FILE, encoding="utf-8") as f:
                status = json.load(f)
        except (OSError, ValueError):
            status = {"state": "booting", "ready": False, "message": "the node has not read its node file yet", "database": database_info()}
        body = (json.dumps(status, indent=2) + "\n").encode()
        self.send_response(200 if status.get("ready") else 503)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):  # noqa: A002 (http.server's signature)
        pass


def health() -> int:
    http.server.ThreadingHTTPServer(("0.0.0.0", HEALTH_PORT), Health).serve_forever()
    return 0


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
        return configure()
    if cmd == "up":
        return up()
    if cmd == "health":
        return health()
    if cmd == "validate" and len(argv) == 3:
        return validate_cmd(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
