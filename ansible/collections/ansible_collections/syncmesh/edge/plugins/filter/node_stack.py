"""A node's description (the bundle's node/node.yml) rendered for the roles: the renderer is
module_utils/node_stack.py, the one every consumer of the description calls."""

from __future__ import annotations

DOCUMENTATION = r"""
name: node_compose
short_description: faasd's docker-compose.yaml of one node, from the node description.
description:
  - Renders the services of a Syncmesh Edge node description (images/node/node.yml) with this node's
    input values, merges the overrides in, and returns the compose file as text. An unknown C(${NAME}),
    a value for a name that is not an input, or an input used without a value fails.
  - The same module renders C(node_functions) (the /system/functions bodies, a list), C(node_secrets)
    (name to owner, mode, file, min_bytes) and C(node_volumes) (name to owner, mode).
positional: _input, values
options:
  _input:
    description: Text of the node description.
    type: str
    required: true
  values:
    description: The inputs' values (text or numbers).
    type: dict
    required: true
  overrides:
    description: Mappings merged recursively, in order, into the compose document (the official MongoDB's settings).
    type: list
    default: []
"""

EXAMPLES = r"""
content: "{{ lookup('ansible.builtin.file', bundle ~ '/node/node.yml') | syncmesh.edge.node_compose(values, overrides) }}"
deployments: "{{ lookup('ansible.builtin.file', bundle ~ '/node/node.yml') | syncmesh.edge.node_functions(values) }}"
"""

RETURN = r"""
_value:
  description: The compose file (text); node_functions a list of dicts, node_secrets and node_volumes a dict.
  type: raw
"""

from ansible.errors import AnsibleFilterError

try:  # the collection installed (ansible-galaxy, the collections path)
    from ansible_collections.syncmesh.edge.plugins.module_utils import node_stack
except ImportError:  # this folder on sys.path (ansible/tests/unit)
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "module_utils"))
    import node_stack


def _load(text):
    try:
        return node_stack.load(str(text))
    except node_stack.NodeStackError as err:
        raise AnsibleFilterError(f"the node description: {err}") from err


def _plain(value):
    """Ansible's own text and mapping types as plain Python (the renderer checks types)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


def node_compose(text, values, overrides=None):
    try:
        return node_stack.compose(_load(text), _plain(values), _plain(overrides or []))
    except node_stack.NodeStackError as err:
        raise AnsibleFilterError(f"node_compose: {err}") from err


def node_functions(text, values):
    try:
        return node_stack.functions(_load(text), _plain(values))
    except node_stack.NodeStackError as err:
        raise AnsibleFilterError(f"node_functions: {err}") from err


def node_secrets(text):
    return {s["name"]: s for s in node_stack.secrets(_load(text))}


def node_volumes(text):
    return {v["name"]: v for v in node_stack.volumes(_load(text))}


def node_htpasswd(password, user):
    """The registry's htpasswd line (bcrypt) for user and password."""
    try:
        return node_stack.htpasswd_line(str(user), str(password))
    except node_stack.NodeStackError as err:
        raise AnsibleFilterError(f"node_htpasswd: {err}") from err


class FilterModule:
    def filters(self):
        return {
            "node_compose": node_compose,
            "node_functions": node_functions,
            "node_secrets": node_secrets,
            "node_volumes": node_volumes,
            "node_htpasswd": node_htpasswd,
        }
