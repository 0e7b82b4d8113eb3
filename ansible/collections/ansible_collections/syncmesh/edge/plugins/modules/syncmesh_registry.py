#!/usr/bin/python
"""Keep a node's Syncmesh registry (syncmesh_meta.nodes) equal to what the inventory says."""

from __future__ import annotations

DOCUMENTATION = r"""
module: syncmesh_registry
short_description: Ensure a Syncmesh node's registry lists itself and its peers as the inventory says.
description:
  - Reads the registry through the function's meta schema (reads are open), then sends only the
    C(addNode), C(updateNode) and C(deleteNode) mutations needed, each signed with the mesh secret
    (protocol v2 of lib/mesh-auth). Reports C(changed) only when it sent a mutation.
options:
  url:
    description: URL of the node's Syncmesh function (through its gateway).
    type: str
    required: true
  node_id:
    description: The node's own id (the signature's target and origin).
    type: str
    required: true
  mesh_secret:
    description: The mesh secret (at least 32 bytes).
    type: str
    required: true
  signed_path:
    description: Request path as the function routes it (signed); the gateway strips C(/function/NAME).
    type: str
    default: /
  nodes:
    description: Desired entries, the own node included (C(own_node=true)).
    type: list
    elements: dict
    required: true
  prune:
    description: Delete registry entries that are not in O(nodes) (the own node is never deleted).
    type: bool
    default: false
  signature_scheme:
    description:
      - C(v2) is lib/mesh-auth's protocol (per-node keys, nonce, method and path), which the Syncmesh function verifies;
        C(v1) only for a function run with SYNCMESH_AUTH_ACCEPT_V1=true during a rolling upgrade.
    type: str
    choices: [v1, v2]
    default: v2
  basic_auth:
    description: C(user:password) for the gateway, when the route needs it.
    type: str
  timeout_s:
    description: Deadline of each request.
    type: int
    default: 10
author: Syncmesh Edge contributors (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Ensure the registry lists this node and its peers
  syncmesh.edge.syncmesh_registry:
    url: http://127.0.0.1:8080/function/syncmesh-fn
    node_id: smn1
    mesh_secret: "{{ secret }}"
    nodes:
      - {id: smn1, address: "http://10.0.0.11:8080/function/syncmesh-fn", lat: 42.69, lon: 23.32, own_node: true}
      - {id: smn2, address: "http://10.0.0.12:8080/function/syncmesh-fn", lat: 42.70, lon: 23.33, subscribed: true}
"""

RETURN = r"""
actions:
  description: The mutations sent, e.g. C(addNode smn2).
  type: list
  elements: str
  returned: always
"""

import base64
import json

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible_collections.syncmesh.edge.plugins.module_utils.mesh_auth import sign_v1, sign_v2
from ansible_collections.syncmesh.edge.plugins.module_utils.registry import LIST_QUERY, plan_actions


def call(module, body, sign):
    data = json.dumps(body, separators=(",", ":")).encode()
    headers = {"content-type": "application/json"}
    p = module.params
    if p["basic_auth"]:
        headers["authorization"] = "Basic " + base64.b64encode(p["basic_auth"].encode()).decode()
    if sign and p["signature_scheme"] == "v1":
        headers.update(sign_v1(p["mesh_secret"], data))
    elif sign:
        headers.update(sign_v2(p["mesh_secret"], "POST", p["signed_path"], p["node_id"], p["node_id"], data))
    try:
        resp = open_url(p["url"], data=data, headers=headers, method="POST", timeout=p["timeout_s"])
        answer = json.loads(resp.read())
    except Exception as err:  # every failure is reported with the URL, never the secret
        module.fail_json(msg=f"registry request to {p['url']} failed: {err}")
    if answer.get("errors"):
        module.fail_json(msg=f"registry request to {p['url']} was refused: {answer['errors'][0].get('message')}", errors=answer["errors"])
    return answer.get("data") or {}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            node_id=dict(type="str", required=True),
            mesh_secret=dict(type="str", required=True, no_log=True),
            signed_path=dict(type="str", default="/"),
            nodes=dict(type="list", elements="dict", required=True),
            prune=dict(type="bool", default=False),
            signature_scheme=dict(type="str", choices=["v1", "v2"], default="v2"),
            basic_auth=dict(type="str", no_log=True),
            timeout_s=dict(type="int", default=10),
        ),
        supports_check_mode=True,
    )
    current = call(module, {"request_type": "meta", "query": LIST_QUERY}, sign=False).get("nodes", [])
    actions = plan_actions(current, module.params["nodes"], module.params["prune"])
    if not module.check_mode:
        for _action, _node, body in actions:
            call(module, dict(body, request_type="meta"), sign=True)
    module.exit_json(changed=bool(actions), actions=[f"{action} {node}" for action, node, _body in actions])


if __name__ == "__main__":
    main()
