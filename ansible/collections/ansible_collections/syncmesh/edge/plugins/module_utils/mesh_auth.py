"""Mesh request signatures, protocol v2, as specified in lib/mesh-auth/README.md (same test vector).

K(B) = HKDF-SHA256(ikm=secret, salt="syncmesh-edge/mesh-auth/v2", info=purpose || 0x00 || B), 32 bytes;
signature = "v2=" + hex HMAC-SHA256(K(target, "http"), canonical), canonical = nine lines.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import time

SALT = b"syncmesh-edge/mesh-auth/v2"
NODE_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def hkdf_sha256(ikm: bytes, salt: bytes, info: bytes, length: int = 32) -> bytes:
    prk = hmac.new(salt, ikm, hashlib.sha256).digest()
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        out += block
        counter += 1
    return out[:length]


def node_key(secret: str, node_id: str, purpose: str = "http") -> bytes:
    if len(secret.encode()) < 32:
        raise ValueError("the mesh secret must be at least 32 bytes")
    if not NODE_ID_RE.match(node_id):
        raise ValueError(f"node id '{node_id}' is not letters, digits and ._:- (1-64)")
    return hkdf_sha256(secret.encode(), SALT, purpose.encode() + b"\x00" + node_id.encode())


def sign_v1(secret: str, body: bytes, timestamp_ms: int | None = None) -> dict:
    """v1 (functions/syncmesh/src/mesh/auth.ts): HMAC-SHA256(secret, "v1:" + timestamp + ":" + body)."""
    ts = str(int(time.time() * 1000) if timestamp_ms is None else timestamp_ms)
    mac = hmac.new(secret.encode(), b"v1:" + ts.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"x-syncmesh-timestamp": ts, "x-syncmesh-signature": "v1=" + mac}


def sign_v2(
    secret: str,
    method: str,
    path: str,
    origin: str,
    target: str,
    body: bytes,
    content_encoding: str = "identity",
    timestamp_ms: int | None = None,
    nonce: str | None = None,
) -> dict:
    ts = str(int(time.time() * 1000) if timestamp_ms is None else timestamp_ms)
    nonce = nonce or os.urandom(16).hex()
    canonical = "\n".join(
        [
            "syncmesh-v2",
            method.upper(),
            path,
            content_encoding.lower() or "identity",
            origin,
            target,
            ts,
            nonce,
            hashlib.sha256(body).hexdigest(),
        ]
    )
    mac = hmac.new(node_key(secret, target, "http"), canonical.encode(), hashlib.sha256).hexdigest()
    return {
        "x-syncmesh-origin": origin,
        "x-syncmesh-target": target,
        "x-syncmesh-timestamp": ts,
        "x-syncmesh-nonce": nonce,
        "x-syncmesh-signature": "v2=" + mac,
    }
