#!/usr/bin/env python3
"""Writes a copy of the lab inventory whose mesh group holds only some of the lab's hosts (test-lab:
the mesh starts with three, the fourth joins with syncmesh.edge.add_node and leaves with syncmesh.edge.remove_node).
Hosts left out are not in the inventory at all. The copy sits beside the original, so both share
inventory_dir/.secrets (one mesh secret and write key).

    inventory.py IN OUT HOST[,HOST...]      (run with the Ansible venv's python: needs PyYAML)
"""

import sys

import yaml

src, out, keep = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
inv = yaml.safe_load(open(src))
hosts = inv["all"]["children"]["syncmesh_nodes"]["hosts"]
missing = [h for h in keep if h not in hosts]
if missing:
    sys.exit(f"inventory.py: {src} has no host {', '.join(missing)}")
inv["all"]["children"]["syncmesh_nodes"]["hosts"] = {h: hosts[h] for h in keep}
with open(out, "w") as f:
    f.write(f"# {', '.join(keep)} of {src} (ansible/lab/inventory.py)\n")
    yaml.safe_dump(inv, f, sort_keys=False)
