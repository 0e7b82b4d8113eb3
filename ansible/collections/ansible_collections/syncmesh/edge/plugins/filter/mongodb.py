"""Which official MongoDB image a node can run, from its /proc/cpuinfo.

MongoDB 5.0 and later need ARMv8.2-A on arm64 (a Raspberry Pi 5's Cortex-A76 has it; a Pi 4's
Cortex-A72 is ARMv8.0 and lacks the `atomics` (LSE) feature, so 4.4.18 is the newest that runs
there) and AVX on x86-64.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: mongodb_version_for_cpu
short_description: The newest official MongoDB image version a CPU can run.
description:
  - Reads the text of /proc/cpuinfo and the node's Debian architecture and returns a dict
    C({version, reason}).
positional: _input, arch
options:
  _input:
    description: Text of /proc/cpuinfo.
    type: str
    required: true
  arch:
    description: Debian architecture (amd64 or arm64).
    type: str
    required: true
  modern:
    description: Version for CPUs with ARMv8.2-A atomics (arm64) or AVX (amd64).
    type: str
    default: "7.0"
  legacy:
    description: Version for ARMv8.0 CPUs (Raspberry Pi 4).
    type: str
    default: "4.4.18"
"""

EXAMPLES = r"""
mongodb_choice: "{{ cpuinfo.content | b64decode | syncmesh.edge.mongodb_version_for_cpu(syncmesh_node_arch) }}"
"""

RETURN = r"""
_value:
  description: C(version) to run and a C(reason) naming the CPU feature that decided it.
  type: dict
"""

from ansible.errors import AnsibleFilterError


def _features(cpuinfo: str, key: str) -> set[str]:
    found: set[str] = set()
    for line in cpuinfo.splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip().lower() == key:
            found.update(value.split())
    return found


def mongodb_version_for_cpu(cpuinfo, arch, modern="7.0", legacy="4.4.18"):
    if not isinstance(cpuinfo, str):
        raise AnsibleFilterError("mongodb_version_for_cpu: expected the text of /proc/cpuinfo")
    if arch == "arm64":
        features = _features(cpuinfo, "features")
        if not features:
            raise AnsibleFilterError("mongodb_version_for_cpu: /proc/cpuinfo lists no 'Features' on this arm64 node")
        if "atomics" in features:
            return {"version": modern, "reason": "arm64 CPU with ARMv8.2-A atomics (LSE)"}
        return {"version": legacy, "reason": "arm64 CPU without 'atomics' (ARMv8.0, e.g. Raspberry Pi 4): MongoDB 5.0+ needs ARMv8.2-A"}
    if arch == "amd64":
        if "avx" in _features(cpuinfo, "flags"):
            return {"version": modern, "reason": "x86-64 CPU with AVX"}
        raise AnsibleFilterError(
            "mongodb_version_for_cpu: this x86-64 CPU has no AVX; MongoDB 5.0+ needs it "
            "and 4.4 is not offered for amd64 here: set mongodb_version"
        )
    raise AnsibleFilterError(f"mongodb_version_for_cpu: unsupported architecture '{arch}' (amd64, arm64)")


class FilterModule:
    def filters(self):
        return {"mongodb_version_for_cpu": mongodb_version_for_cpu}
