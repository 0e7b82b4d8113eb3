#!/usr/bin/env python3
"""manifest.json of an appliance image: what is in it (Debian packages with their licences, the
node's OCI images with their digests, faasd), its sizes, and how it was built. Printed to stdout."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import time


def licences(root: str, package: str) -> list[str]:
    """The License: names of a package's machine-readable (DEP-5) copyright file."""
    path = os.path.join(root, "usr/share/doc", package, "copyright")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    found = []
    for m in re.finditer(r"^License:\s*(\S[^\n]*)$", text, re.M):
        name = m.group(1).strip()
        if name not in found:
            found.append(name)
    return found[:8]


def main() -> None:
    ap = argparse.ArgumentParser()
    for a in ("--name", "--arch", "--packages", "--root", "--images", "--image-list", "--raw", "--out"):
        ap.add_argument(a, required=True)
    ap.add_argument("--installed-mib", type=int, required=True)
    args = ap.parse_args()
    packages = []
    with open(args.packages, encoding="utf-8") as f:
        for line in f:
            name, version, arch = line.rstrip("\n").split("\t")
            packages.append({"name": name, "version": version, "arch": arch, "licenses": licences(args.root, name)})
    images = []
    preloaded_file = os.path.join(args.image_list, "preloaded.json")
    if os.path.exists(preloaded_file):  # preload.sh: imported at build time, archives left out
        archives = json.load(open(preloaded_file, encoding="utf-8"))["images"]
    else:
        archives = []
        for archive in sorted(os.listdir(args.image_list)):
            if not archive.endswith(".oci.tar"):
                continue
            path = os.path.join(args.image_list, archive)
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            archives.append({"name": archive[: -len(".oci.tar")], "archive_sha256": h.hexdigest(), "bytes": os.path.getsize(path)})
    for a in archives:
        name = a["name"]
        ref = open(os.path.join(args.image_list, f"{name}.ref"), encoding="utf-8").read().strip()
        digest_file = os.path.join(args.images, f"{name}.digest")
        digest = open(digest_file, encoding="utf-8").read().strip() if os.path.exists(digest_file) else None
        images.append(
            {
                "name": name,
                "reference": ref if "/" in ref else f"localhost/syncmesh-edge/{name}:{ref}",
                "multi_arch_index_digest": digest,
                "archive_sha256": a["archive_sha256"],
                "bytes": a["bytes"],
                "preloaded": os.path.exists(preloaded_file),
                "test_only": name == "mongo-test-server",
            }
        )
    out = {
        "name": args.name,
        "arch": args.arch,
        "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", time.time())))),
        "debian": "trixie",
        "sizes_bytes": {
            "raw": os.path.getsize(args.raw),
            "installed_root": args.installed_mib * 1024 * 1024,
            **{
                f: os.path.getsize(os.path.join(args.out, f))
                for f in sorted(os.listdir(args.out))
                if f.startswith(args.name) and not f.endswith(".key")
            },
        },
        "database": json.load(open(os.path.join(args.root, "usr/lib/syncmesh/database.json"), encoding="utf-8")),
        "images": images,
        "faasd": {
            "binary_sha256": hashlib.sha256(open(os.path.join(args.root, "usr/lib/syncmesh/bin/faasd"), "rb").read()).hexdigest(),
            "licenses": "MIT (faasd, OpenFaaS gateway, of-watchdog, queue worker; /usr/share/doc/syncmesh-edge/faasd-licenses)",
        },
        "licenses_note": (
            "Debian packages: /usr/share/doc/<package>/copyright in the image; images: images/NOTICE (/usr/share/doc/syncmesh-edge/NOTICE)"
        ),
        "packages": packages,
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
