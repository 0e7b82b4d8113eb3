"""MongoDB's official image (an image built with MONGO_IMAGE): pulled once when it is not bundled,
and its single-node replica set initiated once faasd runs it."""

from __future__ import annotations

import os
import time

import mongodb_cpu  # which MongoDB a CPU runs, from the Ansible collection

from .common import LIB, log, sh
from .status import console, write_status


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


def cpu_problem(db: dict, arch: str) -> str | None:
    """Why this CPU cannot run the image's MongoDB, or None."""
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        return mongodb_cpu.cpu_problem(f.read(), arch, db["version"])
