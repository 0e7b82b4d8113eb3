"""Paths, the journal, commands, files and polling: what every step of the boot program uses."""

from __future__ import annotations

import http.client
import os
import subprocess
import time
import urllib.error
import urllib.request

LIB = os.environ.get("SYNCMESH_LIB", "/usr/lib/syncmesh")
NODE_FILE_CLOUD = "/etc/syncmesh/syncmesh-node.yaml"  # cloud-init write_files (wins)
NODE_FILE_BOOT = "/boot/efi/syncmesh-node.yaml"  # the boot partition (VM: the ESP)
CLOUD_USER_DATA = "/var/lib/cloud/instance/user-data.txt"
RUN = "/run/syncmesh"
STATUS_FILE = f"{RUN}/status.json"
NODE_JSON = f"{RUN}/node.json"
BOOT_STAMP = f"{RUN}/boot-monotonic"
STATE = "/var/lib/syncmesh"
NODE_STATE = f"{STATE}/node"
SECRETS = f"{STATE}/secrets"
REGISTRY_PASSWORD = f"{SECRETS}/registry-password"  # the node file's registry_password, when it gives one
HEALTH_PORT = int(os.environ.get("SYNCMESH_HEALTH_PORT", "8099"))
GATEWAY = "http://127.0.0.1:8080"
FUNCTION = "syncmesh-fn"
AGENT_PORT = 7070
# error codes (docs/errors.md)
NODE_FILE_ERROR = "EDGE_APPLIANCE_NODE_FILE"
START_ERROR = "EDGE_APPLIANCE_START"


def log(msg: str) -> None:
    """To the journal (stdout of the unit); never a secret."""
    print(msg, flush=True)


def uptime_s() -> float:
    with open("/proc/uptime", encoding="utf-8") as f:
        return float(f.read().split()[0])


def sh(*argv: str, env: dict | None = None, check: bool = True, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env={**os.environ, **(env or {})}, check=check, timeout=timeout, text=True, capture_output=True)


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


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
