"""The node's own gateway (its REST API, basic auth): the one client of the boot program, and its
deploy step: the functions rendered from the node description (node_stack, the collection's
renderer every consumer of node.yml uses), their secrets stored from faasd's secrets folder."""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import time
import urllib.error
import urllib.request

import node_stack

from .common import GATEWAY, NODE_STATE, log, read_text, write_file


class Gateway:
    """The node's own gateway API. While faasd starts (or restarts a core service) the gateway's
    published port can accept a connection and close it without an answer, or refuse it: such
    connection failures are retried for up to `retry_s` (an HTTP error status is an answer, and
    is returned). Deploys are never sent twice (see `deploy`)."""

    def __init__(
        self,
        auth: str,
        url: str = GATEWAY,
        retry_s: float = 120,
        pause_s: float = 2,
        state_dir: str = NODE_STATE,
        settle_s: float = 900,
    ):
        self.auth = "Basic " + base64.b64encode(auth.encode()).decode()
        self.url = url
        self.retry_s = retry_s
        self.pause_s = pause_s
        self.state_dir = state_dir
        self.settle_s = settle_s

    def _once(self, method: str, path: str, body, timeout: float) -> tuple[int, str]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method, headers={"authorization": self.auth})
        if data is not None:
            req.add_header("content-type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(errors="replace")

    def request(self, method: str, path: str, body=None, timeout: float = 30) -> tuple[int, str]:
        deadline = time.monotonic() + self.retry_s
        while True:
            try:
                return self._once(method, path, body, timeout)
            except (OSError, http.client.HTTPException) as err:  # refused, reset, closed without an answer, timed out
                if time.monotonic() + self.pause_s > deadline:
                    raise RuntimeError(f"the gateway did not answer {method} {path} within {self.retry_s:.0f} s: {err}") from err
                log(f"gateway: {method} {path}: {err}; retrying")
                time.sleep(self.pause_s)

    def upsert_secret(self, name: str, value: str) -> None:
        code, text = self.request("POST", "/system/secrets", {"name": name, "value": value})
        if code in (200, 201, 202):
            return
        code2, text2 = self.request("PUT", "/system/secrets", {"name": name, "value": value})
        if not 200 <= code2 < 300:
            raise RuntimeError(f"the gateway refused secret {name}: HTTP {code} {text[:200]}; update: HTTP {code2} {text2[:200]}")

    def deploy(self, fn: dict) -> str:
        """Creates (POST) or updates (PUT) the function; "unchanged" when this very spec was sent
        before and the function exists (a restart after a slow first boot, a reboot without a
        node-file change). A deploy is sent once: on slow hardware the gateway gives up on it
        (its write_timeout, 60 s) while faasd goes on creating the function, and sending it again
        would start a second creation or update beside the first. So when the answer is lost, the
        function is polled until it exists (up to `settle_s`); its readiness is the caller's."""
        name = fn["service"]
        digest = hashlib.sha256(json.dumps(fn, sort_keys=True).encode()).hexdigest()
        sent_file = f"{self.state_dir}/deployed-{name}.sha256"
        exists = lambda: self.request("GET", f"/system/function/{name}")[0] == 200  # noqa: E731
        present = exists()
        if present and os.path.exists(sent_file):
            with open(sent_file, encoding="utf-8") as f:
                if f.read().strip() == digest:
                    return "unchanged"
        method = "PUT" if present else "POST"
        # recorded before sending: after a lost answer the function may exist from this request
        write_file(sent_file, digest + "\n", 0o600)
        try:
            code, text = self._once(method, "/system/functions", fn, timeout=120)
        except (OSError, http.client.HTTPException) as err:
            log(f"gateway: {method} /system/functions ({name}): {err}; not sent again, waiting for the function")
            if method == "PUT":
                # not known to be applied: the next start sends it again (the serving version
                # stays until a new one is ready, faasd patch 0004)
                os.remove(sent_file)
                return "update sent (its answer was lost)"
            deadline = time.monotonic() + self.settle_s
            while not exists():
                if time.monotonic() + self.pause_s > deadline:
                    os.remove(sent_file)
                    raise RuntimeError(
                        f"the gateway lost the answer to POST /system/functions ({err}) and {name} did not appear "
                        f"within {self.settle_s:g} s"
                    ) from err
                time.sleep(self.pause_s)
            return "created (its answer was lost; the function appeared)"
        if not 200 <= code < 300:
            os.remove(sent_file)
            raise RuntimeError(f"the gateway refused to deploy {name}: HTTP {code}: {text[:300]}")
        return "updated" if method == "PUT" else "created"


def deploy_functions(gw: Gateway, description: str, values: dict, secrets_dir: str) -> list[dict]:
    """The node description's functions with this node's values: every secret they list stored
    from faasd's secrets folder (node-prepare.sh wrote each there), then each function deployed."""
    with open(description, encoding="utf-8") as f:
        bodies = node_stack.functions(node_stack.load(f.read()), values)
    for name in node_stack.function_secrets(bodies):
        path = os.path.join(secrets_dir, name)
        if not os.path.exists(path):
            raise RuntimeError(f"the functions need the secret {name}, which {secrets_dir} does not hold")
        gw.upsert_secret(name, read_text(path))
    for fn in bodies:
        log(f"{fn['service']}: {gw.deploy(fn)}")
    return bodies
