#!/usr/bin/env python3
"""Writes .mesh/topology.json for a provisioned mesh: the mesh description every mesh tool reads
(docs/reference/mesh-description.md; the syncmesh CLI checks it: bin/syncmesh mesh --mesh FILE),
with "runtime": "faasd", so mesh clients, scenarios and the CLI run against it.

    topology.py INVENTORY_JSON MESH_SECRET_FILE OUT      (INVENTORY_JSON from ansible-inventory --list)

The write key (data writes: Authorization: Bearer) is the file "write-key" beside the mesh secret,
where the syncmesh_node role generates it (inventory_dir/.secrets/); each node's registry
credentials (user:password) are registry-auth/NODE_ID there, where the faasd role keeps them
(faasd_registry_auth_file), or the host's own faasd_registry_auth_file.
"""

import datetime
import json
import os
import sys

inventory_json, secret_file, out = sys.argv[1:4]
inv = json.load(open(inventory_json))
hostvars = inv["_meta"]["hostvars"]
hosts = inv.get("syncmesh_nodes", {}).get("hosts", [])
nodes = []
secrets_dir = os.path.dirname(secret_file)
for host in hosts:
    hv = hostvars[host]
    addr = hv.get("syncmesh_node_address", hv.get("ansible_host", host))
    node_id = hv.get("syncmesh_node_id", host)
    own = hv.get("faasd_registry_auth_file")  # a host's own file (ansible-inventory gives templates untemplated)
    registry_auth = own if isinstance(own, str) and "{{" not in own else os.path.join(secrets_dir, "registry-auth", node_id)
    nodes.append(
        {
            "id": node_id,
            "function_url": f"http://{addr}:8080/function/syncmesh-fn",
            "gateway_url": f"http://{addr}:8080",
            # the gateway's credentials stay on the node (/var/lib/faasd/secrets); not copied here
            "basic_auth_file": None,
            # the node's registry (images/node/node.yml) and its user:password, kept on the controller
            # by the faasd role (null until the playbooks ran for this node)
            "registry": f"{addr}:5000",
            "registry_auth_file": os.path.abspath(registry_auth) if os.path.isfile(registry_auth) else None,
            # MongoDB listens inside faasd's network only
            "mongodb_uri": None,
            "agent_address": f"{addr}:7070",
            "lat": hv.get("syncmesh_lat"),
            "lon": hv.get("syncmesh_lon"),
            "namespace": host if hv.get("lab_host") else None,
            "address": addr,
            "host_interface": f"{host}-h" if hv.get("lab_host") else None,
            "peers": {},
            # the listener's health endpoints, published on the node (images/node/docker-compose.yaml)
            "listener_url": f"http://{addr}:8091",
        }
    )
# what every node's registry holds for its peers (the syncmesh_node role's registry.yml.j2): their
# own function URLs, the same as their function_url here
for node in nodes:
    node["peers"] = {p["id"]: p["function_url"] for p in nodes if p is not node}
topology = {
    "runtime": "faasd",
    "mesh": "ansible",
    # lab hosts are network namespaces (ansible/lab); provisioned machines are hosts
    "isolation": "netns" if hosts and all(hostvars[h].get("lab_host") for h in hosts) else "host",
    "subnet": None,
    "host_address": None,
    "latency": "none",
    "forward_mode": "parallel",
    "toxiproxy_api": None,
    "secret_file": secret_file,
    "write_key_file": os.path.join(os.path.dirname(secret_file), "write-key"),
    "created_at": datetime.datetime.now(datetime.UTC).isoformat(),
    "nodes": nodes,
}
with open(out, "w") as f:
    json.dump(topology, f, indent=2)
print(f"topology: {len(nodes)} nodes in {out}")
