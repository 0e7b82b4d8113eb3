"""Early boot (syncmesh-configure.service, before the network): the node file from cloud-init or
the boot partition, validated; host name, network, Wi-Fi and SSH keys applied; the validated
settings written to node.json for `up`, or the problems said on the console and at the health URL."""

from __future__ import annotations

import base64
import json
import os
import time

import nodefile
import yaml

from .common import (
    BOOT_STAMP,
    CLOUD_USER_DATA,
    HEALTH_PORT,
    NODE_FILE_BOOT,
    NODE_FILE_CLOUD,
    NODE_FILE_ERROR,
    NODE_JSON,
    REGISTRY_PASSWORD,
    RUN,
    SECRETS,
    STATE,
    log,
    sh,
    uptime_s,
    write_file,
)
from .status import console, write_status

# ---------------------------------------------------------------------------------------------
# where the node file is: cloud-init's user-data, or the boot partition


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


# ---------------------------------------------------------------------------------------------
# what keeps the node reachable


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


# ---------------------------------------------------------------------------------------------
# the step


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
    # the registry's password when the node file gives one (Terraform's node-config, the operator);
    # without it the node keeps the one it generated (node-prepare.sh)
    if cfg.registry_password is not None:
        write_file(REGISTRY_PASSWORD, cfg.registry_password, 0o600)
    elif os.path.exists(REGISTRY_PASSWORD):
        os.remove(REGISTRY_PASSWORD)
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
