"""Which official MongoDB image a node can run, from its /proc/cpuinfo (the logic is
module_utils/mongodb_cpu.py, shared with the appliance's boot program)."""

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

try:  # the collection installed (ansible-galaxy, the collections path)
    from ansible_collections.syncmesh.edge.plugins.module_utils.mongodb_cpu import version_for_cpu
except ImportError:  # this folder on sys.path (ansible/tests/unit)
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "module_utils"))
    from mongodb_cpu import version_for_cpu


def mongodb_version_for_cpu(cpuinfo, arch, modern="7.0", legacy="4.4.18"):
    try:
        return version_for_cpu(cpuinfo, arch, modern, legacy)
    except ValueError as err:
        raise AnsibleFilterError(f"mongodb_version_for_cpu: {err}") from err


class FilterModule:
    def filters(self):
        return {"mongodb_version_for_cpu": mongodb_version_for_cpu}
