"""Which registry mutations make a node's registry (syncmesh_meta.nodes) equal to a wanted list.

Pure logic, no Ansible imports: the syncmesh_registry module and the appliance image's first boot
(images/appliance) both use it. Each action is (name, node id, GraphQL body without request_type).
"""

from __future__ import annotations

FIELDS = ("address", "lat", "lon", "own_node", "subscribed")
LIST_QUERY = "{ nodes { id address lat lon own_node subscribed } }"


def wanted(entry: dict) -> dict:
    return {
        "id": entry["id"],
        "address": entry["address"],
        "lat": float(entry["lat"]),
        "lon": float(entry["lon"]),
        "own_node": bool(entry.get("own_node", False)),
        "subscribed": bool(entry.get("subscribed", False)),
    }


def plan_actions(current: list, desired: list, prune: bool = False) -> list:
    """Mutations turning `current` (the nodes LIST_QUERY returned) into `desired` (entries for wanted())."""
    want = {n["id"]: wanted(n) for n in desired}
    have_by_id = {n["id"]: n for n in current}
    actions = []
    for node_id, node in want.items():
        have = have_by_id.get(node_id)
        if have is None:
            actions.append(("addNode", node_id, {"query": "mutation($n: NodeInput!) { addNode(node: $n) { id } }", "variables": {"n": node}}))
        elif any(have.get(f) != node[f] for f in FIELDS):
            patch = {f: node[f] for f in FIELDS}
            actions.append(
                (
                    "updateNode",
                    node_id,
                    {
                        "query": "mutation($id: ID!, $p: NodePatch!) { updateNode(id: $id, node: $p) { id } }",
                        "variables": {"id": node_id, "p": patch},
                    },
                )
            )
    if prune:
        for node_id, have in have_by_id.items():
            if node_id not in want and not have.get("own_node"):
                actions.append(("deleteNode", node_id, {"query": "mutation($id: ID!) { deleteNode(id: $id) }", "variables": {"id": node_id}}))
    return actions
