#!/usr/bin/env python3
"""Fails when a committed Terraform lock file would break `tofu init` for a user with internet.

The providers of this machine's offline toolchain are built here from source (toolchain.sh), so
their hashes are not the published ones, and a lock file `tofu init` writes here holds only those
(one `h1:` per provider, no `zh:`). Committed, such a file stops every user's `tofu init` ("does
not match any of the checksums recorded in the dependency lock file"). The repository therefore
commits no lock file; a maintainer with internet may commit ones written by

    tofu providers lock -platform=linux_amd64 -platform=linux_arm64 -platform=darwin_arm64

in a root (docs/guides/terraform-scenarios.md). This check accepts a committed lock file only
when every provider in it has the published archive hashes (`zh:`, from the registry's signed
checksums) and `h1:` hashes for at least those three platforms, and none of its hashes is one of
a provider built here (the mirror under .cache/terraform, when there is one).

    python3 terraform/hack/check_locks.py     (make verify and make test-tf-plans run it)
"""

import base64
import hashlib
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIRROR = os.path.join(os.environ.get("TF_CACHE", os.path.join(ROOT, ".cache", "terraform")), "mirror")
PLATFORMS = 3  # linux_amd64, linux_arm64, darwin_arm64
PROVIDER = re.compile(r'provider\s+"([^"]+)"\s*\{(.*?)\n\}', re.S)
HASH = re.compile(r'"((?:h1|zh):[^"]+)"')


def committed_locks() -> list[str]:
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, "ls-files", "-z", "--", "*.terraform.lock.hcl"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        return [p for p in out.split("\0") if p]
    except (OSError, subprocess.CalledProcessError):  # no git (an unpacked tarball): every lock file outside .cache
        found = []
        for d, dirs, files in os.walk(ROOT):
            dirs[:] = [x for x in dirs if x not in (".cache", ".git", "node_modules", ".terraform")]
            found += [os.path.relpath(os.path.join(d, f), ROOT) for f in files if f == ".terraform.lock.hcl"]
        return found


def h1(directory: str) -> str:
    """The h1: hash of an unpacked provider folder, as OpenTofu computes it (Go's dirhash.Hash1)."""
    lines = []
    for d, _dirs, files in os.walk(directory):
        for f in files:
            path = os.path.join(d, f)
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
            lines.append(f"{digest}  {os.path.relpath(path, directory)}\n")
    summary = hashlib.sha256("".join(sorted(lines, key=lambda line: line.split("  ", 1)[1])).encode()).digest()
    return "h1:" + base64.b64encode(summary).decode()


def local_builds() -> dict[str, str]:
    """h1: hash -> provider folder, for every provider in this machine's mirror."""
    hashes = {}
    if os.path.isdir(MIRROR):
        for d, dirs, _files in os.walk(MIRROR):
            if re.fullmatch(r"[a-z0-9]+_[a-z0-9]+", os.path.basename(d)) and not dirs:
                hashes[h1(d)] = os.path.relpath(d, MIRROR)
    return hashes


def main() -> int:
    locks = committed_locks()
    local = local_builds() if locks else {}
    problems = []
    for lock in locks:
        with open(os.path.join(ROOT, lock), encoding="utf-8") as fh:
            text = fh.read()
        providers = PROVIDER.findall(text)
        if not providers:
            problems.append(f"{lock}: no provider block")
        for name, body in providers:
            hashes = HASH.findall(body)
            h1s = [h for h in hashes if h.startswith("h1:")]
            if not any(h.startswith("zh:") for h in hashes) or len(h1s) < PLATFORMS:
                problems.append(
                    f"{lock}: {name} has {len(h1s)} h1: and no zh: hash"
                    if not any(h.startswith("zh:") for h in hashes)
                    else f"{lock}: {name} has h1: hashes for {len(h1s)} platform(s), fewer than {PLATFORMS}"
                )
            for h in hashes:
                if h in local:
                    problems.append(f"{lock}: {name} holds {h}, the hash of this machine's own build ({local[h]})")
    if problems:
        print("check_locks: committed lock files that would stop `tofu init` for users:", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        print(
            "  remove them (git rm), or write them with internet: tofu providers lock "
            "-platform=linux_amd64 -platform=linux_arm64 -platform=darwin_arm64 (docs/guides/terraform-scenarios.md)",
            file=sys.stderr,
        )
        return 1
    print(f"check_locks: {len(locks)} committed lock file(s), none with a hash of a build from here", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
