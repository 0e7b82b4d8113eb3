"""Which official MongoDB image a CPU runs, from the text of /proc/cpuinfo.

MongoDB 5.0 and later need ARMv8.2-A on arm64 (a Raspberry Pi 5's Cortex-A76 has it; a Pi 4's
Cortex-A72 is ARMv8.0 and lacks the `atomics` (LSE) feature, so 4.4.18 is the newest that runs
there) and AVX on x86-64. Shared by the `mongodb_version_for_cpu` filter (the Ansible mongodb
role) and the appliance's boot program (images/appliance), which copies this file. Standard
library only; errors are ValueError with a message that says what to do.
"""

from __future__ import annotations

import re


def cpu_features(cpuinfo: str, key: str) -> set[str]:
    """The words of every `key: ...` line of /proc/cpuinfo (`features` on arm64, `flags` on x86-64)."""
    found: set[str] = set()
    for line in cpuinfo.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == key:
            found.update(value.split())
    return found


def version_for_cpu(cpuinfo: str, arch: str, modern: str = "7.0", legacy: str = "4.4.18") -> dict:
    """{version, reason}: the newest of `modern` / `legacy` this CPU runs."""
    if not isinstance(cpuinfo, str):
        raise ValueError("expected the text of /proc/cpuinfo")
    if arch == "arm64":
        features = cpu_features(cpuinfo, "features")
        if not features:
            raise ValueError("/proc/cpuinfo lists no 'Features' on this arm64 node")
        if "atomics" in features:
            return {"version": modern, "reason": "arm64 CPU with ARMv8.2-A atomics (LSE)"}
        return {"version": legacy, "reason": "arm64 CPU without 'atomics' (ARMv8.0, e.g. Raspberry Pi 4): MongoDB 5.0+ needs ARMv8.2-A"}
    if arch == "amd64":
        if "avx" in cpu_features(cpuinfo, "flags"):
            return {"version": modern, "reason": "x86-64 CPU with AVX"}
        raise ValueError("this x86-64 CPU has no AVX; MongoDB 5.0+ needs it and 4.4 is not offered for amd64 here: set mongodb_version")
    raise ValueError(f"unsupported architecture '{arch}' (amd64, arm64)")


def major_version(version: str) -> int:
    """5 of '5.0.3', 4 of '4.4.18'; ValueError when the text does not start with a number."""
    m = re.match(r"(\d+)\.", version + ".")
    if not m:
        raise ValueError(f"cannot tell MongoDB's version from '{version}': use a versioned tag such as 7.0 or 4.4.18")
    return int(m.group(1))


def cpu_problem(cpuinfo: str, arch: str, version: str) -> str | None:
    """Why this CPU cannot run MongoDB `version` (None: it can). 4.x runs on every CPU offered here."""
    if major_version(version) < 5:
        return None
    if arch == "arm64" and "atomics" not in cpu_features(cpuinfo, "features"):
        return f"MongoDB {version} needs ARMv8.2-A (the 'atomics' CPU feature), which this CPU lacks (a Pi 4 is ARMv8.0): use 4.4.18"
    if arch == "amd64" and "avx" not in cpu_features(cpuinfo, "flags"):
        return f"MongoDB {version} needs AVX, which this x86-64 CPU lacks"
    return None
