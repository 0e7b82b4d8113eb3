"""The node registry through the function's GraphQL `meta` requests, signed (lib/mesh-auth v2)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import mesh_auth  # lib/mesh-auth protocol v2, from the Ansible collection
import registry as registry_plan  # which mutations make a registry equal a list, from the Ansible collection

from .common import FUNCTION, log


class RegistryRefused(RuntimeError):
    """The function answered 400: the request itself is wrong, and sending it again will not help."""


def function_url(host: str) -> str:
    return f"http://{host}:8080/function/{FUNCTION}"


def meta(url: str, secret: str, origin: str, target: str, query: str, variables: dict | None = None, timeout: float = 10) -> dict:
    """A registry request to a node's function, signed (lib/mesh-auth v2) for `target`."""
    body = {"request_type": "meta", "query": query, **({"variables": variables} if variables else {})}
    data = json.dumps(body, separators=(",", ":")).encode()
    headers = {"content-type": "application/json", **mesh_auth.sign_v2(secret, "POST", "/", origin, target, data)}
    req = urllib.request.Request(url, data=data, method="POST", headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            answer = json.loads(r.read())
    except urllib.error.HTTPError as err:
        if err.code == 400:
            raise RegistryRefused(f"registry request to {url} was refused: HTTP 400: {refusal(err)}") from err
        raise RuntimeError(f"registry request to {url} was refused: HTTP {err.code}: {refusal(err)}") from err
    if answer.get("errors"):
        raise RuntimeError(f"registry request to {url} was refused: {answer['errors'][0].get('message')}")
    return answer.get("data") or {}


def refusal(err: urllib.error.HTTPError) -> str:
    """What a refused request's body says: the function's error code and message, or its first bytes."""
    try:
        raw = err.read(4096)
    except OSError:
        return err.reason or "no body"
    try:
        first = json.loads(raw)["errors"][0]
        return f"{(first.get('extensions') or {}).get('code', 'no code')}: {first.get('message')}"
    except (ValueError, KeyError, IndexError, TypeError):
        return raw.decode("utf-8", "replace").strip()[:300] or (err.reason or "no body")


def sync_registry(
    url: str, secret: str, nid: str, nodes: list[dict], within_s: float = 900, pause_s: float = 5, timeout_s: float = 60
) -> None:
    """Makes the node's own registry list `nodes`. Retried until it succeeds or `within_s` passes:
    a fresh function's first requests are slow on slow hardware (under software emulation more
    than 10 s), and each try lists the registry again, so a change that was applied before its
    answer was lost is not applied twice. A 400 (the request is wrong) fails at once, saying why."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            current = meta(url, secret, nid, nid, registry_plan.LIST_QUERY, timeout=timeout_s).get("nodes", [])
            for _, _, body in registry_plan.plan_actions(current, nodes):
                meta(url, secret, nid, nid, body["query"], body.get("variables"), timeout=timeout_s)
            return
        except RegistryRefused:
            raise
        except (OSError, RuntimeError, ValueError) as err:
            if time.monotonic() + pause_s > deadline:
                raise RuntimeError(f"the node's registry could not be updated within {within_s:g} s: {err}") from err
            log(f"registry: {err}; retrying")
            time.sleep(pause_s)
