"""The appliance's node file (syncmesh-node.yaml): parse and validate, strictly.

Every problem is collected (not only the first) and said as `field: what is wrong (what is
allowed)`, so one look at the console or the health URL tells the operator everything to fix.
Unknown fields are errors (a typo must not be ignored). Pure: no I/O except reading the secret
files a node file may point at.

Python, not Node: the image needs python3 for cloud-init anyway, and the node's Node.js lives in
its containers only (faasd), so the validator adds nothing to the image.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass, field

import yaml

MIN_SECRET_BYTES = 32
# the node id is also the host name and part of the signatures (lib/mesh-auth): a DNS label
NODE_ID_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")
HOST_RE = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")
SSH_KEY_RE = re.compile(
    r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com)"
    r" [A-Za-z0-9+/=]{16,}( .*)?$"
)
IFACE_RE = re.compile(r"^[A-Za-z0-9*?_.:-]{1,15}$")
COUNTRY_RE = re.compile(r"^[A-Z]{2}$")
LOG_LEVELS = ("fatal", "error", "warn", "info", "debug", "trace")
# how long a node waits for each peer's answer when it forwards a query (the function's
# SYNCMESH_NODE_TIMEOUT_MS); the whole fan-out gets 5 s more. Slow nodes (a Pi on an SD card, a VM
# under software emulation scanning a month of readings) need more than the default. At most 45:
# the request deadline is the fan-out's + 5 s, and the node's gateway cuts every request at 60 s
# (images/node/docker-compose.yaml read/write_timeout).
PEER_TIMEOUT_S_DEFAULT = 20
PEER_TIMEOUT_S_MAX = 45
# the node's registry password (optional: without one the node generates its own): written as
# user:password (no colon) and hashed with bcrypt, which reads only the first 72 bytes
REGISTRY_PASSWORD_MAX_BYTES = 72

TOP_FIELDS = {
    "node_id",
    "lat",
    "lon",
    "mesh_secret",
    "mesh_secret_file",
    "write_key",
    "write_key_file",
    "registry_password",
    "registry_password_file",
    "address",
    "peers",
    "discovery",
    "network",
    "wifi",
    "ssh_authorized_keys",
    "mongodb_publish",
    "log_level",
    "peer_timeout_s",
}
NETWORK_FIELDS = {"interface", "address", "gateway", "dns"}
WIFI_FIELDS = {"ssid", "psk", "country"}


class NodeFileError(Exception):
    """The node file is unusable; `problems` lists every reason (field: message)."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass
class Peer:
    id: str
    host: str


@dataclass
class Network:
    interface: str = "en* eth*"
    address: str | None = None  # CIDR, e.g. 10.0.0.11/24; None: DHCP
    gateway: str | None = None
    dns: list[str] = field(default_factory=list)


@dataclass
class Wifi:
    ssid: str
    psk: str
    country: str


@dataclass
class NodeConfig:
    node_id: str
    lat: float
    lon: float
    mesh_secret: str = field(repr=False)
    write_key: str = field(repr=False)
    address: str | None
    peers: list[Peer]
    network: Network
    wifi: Wifi | None
    ssh_authorized_keys: list[str]
    mongodb_publish: str
    log_level: str
    peer_timeout_s: int = PEER_TIMEOUT_S_DEFAULT
    # None: not given; the node generates its registry's password once and keeps it
    registry_password: str | None = field(default=None, repr=False)


@dataclass
class Access:
    """What is applied even when the node file is otherwise wrong, so the node stays reachable."""

    network: Network | None
    wifi: Wifi | None
    ssh_authorized_keys: list[str]
    node_id: str | None


def _secret(doc: dict, name: str, problems: list[str], required: bool = True) -> str | None:
    value, path = doc.get(name), doc.get(f"{name}_file")
    if not required and value is None and path is None:
        return None
    if value is not None and path is not None:
        problems.append(f"{name}: give either {name} or {name}_file, not both")
        return None
    if path is not None:
        if not isinstance(path, str) or not path.startswith("/"):
            problems.append(f"{name}_file: must be an absolute path (e.g. /boot/efi/{name.replace('_', '-')})")
            return None
        try:
            with open(path, encoding="utf-8") as f:
                value = f.read().strip()
        except OSError as err:
            problems.append(f"{name}_file: cannot read {path}: {err.strerror}")
            return None
    if value is None:
        problems.append(
            f"{name}: missing (a random string of at least {MIN_SECRET_BYTES} bytes, e.g. `openssl rand -hex 32`; or {name}_file)"
        )
        return None
    if not isinstance(value, str):
        problems.append(f"{name}: must be a string (quote it)")
        return None
    n = len(value.encode())
    if n < MIN_SECRET_BYTES:
        problems.append(f"{name}: too short ({n} bytes; at least {MIN_SECRET_BYTES} are required, e.g. `openssl rand -hex 32`)")
        return None
    if any(c.isspace() for c in value):
        problems.append(f"{name}: must not contain white space")
        return None
    return value


def _coordinate(doc: dict, name: str, limit: float, problems: list[str]) -> float | None:
    v = doc.get(name)
    if v is None:
        problems.append(f"{name}: missing (the node's {'latitude' if name == 'lat' else 'longitude'} in degrees, -{limit:g}..{limit:g})")
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        problems.append(f"{name}: must be a number in degrees (-{limit:g}..{limit:g}), got {type(v).__name__} {v!r}")
        return None
    if not -limit <= float(v) <= limit:
        problems.append(f"{name}: {v} is out of range (-{limit:g}..{limit:g})")
        return None
    return float(v)


def _host(value: object, where: str, problems: list[str]) -> str | None:
    if not isinstance(value, str):
        problems.append(f"{where}: must be an IP address or a host name")
        return None
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    if HOST_RE.match(value) and not value.replace(".", "").isdigit():
        return value
    problems.append(f"{where}: '{value}' is not an IP address or a host name")
    return None


def _unknown(doc: dict, allowed: set[str], where: str, problems: list[str]) -> None:
    for k in sorted(set(doc) - allowed, key=str):
        problems.append(f"{where}{k}: unknown field (allowed: {', '.join(sorted(allowed))})")


def _network(doc: object, problems: list[str]) -> Network | None:
    if doc is None:
        return Network()
    if not isinstance(doc, dict):
        problems.append("network: must be a mapping (interface, address, gateway, dns)")
        return None
    before = len(problems)
    _unknown(doc, NETWORK_FIELDS, "network.", problems)
    net = Network()
    if "interface" in doc:
        # "en* eth*" or a YAML list of names/patterns
        given = doc["interface"]
        names = given.split() if isinstance(given, str) else given if isinstance(given, list) else None
        if not names or not all(isinstance(p, str) and IFACE_RE.match(p) for p in names):
            problems.append(
                "network.interface: must be interface names or patterns, space-separated or a list (e.g. enp1s0, 'en* eth*', [en*, eth*])"
            )
        else:
            net.interface = " ".join(names)
    if "address" in doc:
        try:
            iface = ipaddress.ip_interface(str(doc["address"]))
            if "/" not in str(doc["address"]):
                raise ValueError("no prefix length")
            net.address = str(iface)
        except ValueError:
            problems.append(f"network.address: '{doc['address']}' is not an address with its prefix length (e.g. 10.0.0.11/24)")
    if "gateway" in doc:
        try:
            net.gateway = str(ipaddress.ip_address(str(doc["gateway"])))
        except ValueError:
            problems.append(f"network.gateway: '{doc['gateway']}' is not an IP address")
        if net.address is None and "address" not in doc:
            problems.append("network.gateway: needs network.address (a static address)")
    if "dns" in doc:
        dns = doc["dns"]
        if not isinstance(dns, list) or not dns:
            problems.append("network.dns: must be a list of IP addresses")
        else:
            for i, d in enumerate(dns):
                try:
                    net.dns.append(str(ipaddress.ip_address(str(d))))
                except ValueError:
                    problems.append(f"network.dns[{i}]: '{d}' is not an IP address")
    return net if len(problems) == before else None


def _wifi(doc: object, problems: list[str]) -> Wifi | None:
    if doc is None:
        return None
    if not isinstance(doc, dict):
        problems.append("wifi: must be a mapping (ssid, psk, country)")
        return None
    before = len(problems)
    _unknown(doc, WIFI_FIELDS, "wifi.", problems)
    ssid, psk, country = doc.get("ssid"), doc.get("psk"), doc.get("country")
    if not isinstance(ssid, str) or not 1 <= len(ssid.encode()) <= 32:
        problems.append("wifi.ssid: missing or not 1-32 bytes")
    if not isinstance(psk, str) or not 8 <= len(psk) <= 63:
        problems.append("wifi.psk: missing or not 8-63 characters (WPA2 passphrase)")
    if not isinstance(country, str) or not COUNTRY_RE.match(country):
        problems.append("wifi.country: missing or not a two-letter country code (e.g. BG, DE)")
    return Wifi(ssid, psk, country) if len(problems) == before else None  # type: ignore[arg-type]


def _ssh_keys(doc: object, problems: list[str]) -> list[str]:
    if doc is None:
        return []
    if not isinstance(doc, list):
        problems.append("ssh_authorized_keys: must be a list of public keys (one line each, as in authorized_keys)")
        return []
    keys = []
    for i, k in enumerate(doc):
        if isinstance(k, str) and SSH_KEY_RE.match(k.strip()) and "\n" not in k.strip():
            keys.append(k.strip())
        else:
            problems.append(f"ssh_authorized_keys[{i}]: not an SSH public key line (ssh-ed25519 AAAA... comment)")
    return keys


def _peers(doc: object, own_id: str | None, problems: list[str]) -> list[Peer]:
    if doc is None:
        return []
    if not isinstance(doc, list):
        problems.append("peers: must be a list of node-id@address entries (e.g. node-2@10.0.0.12)")
        return []
    peers: list[Peer] = []
    for i, p in enumerate(doc):
        if not isinstance(p, str) or p.count("@") != 1:
            problems.append(f"peers[{i}]: '{p}' is not node-id@address (e.g. node-2@10.0.0.12)")
            continue
        pid, host = p.split("@")
        if not NODE_ID_RE.match(pid):
            problems.append(f"peers[{i}]: node id '{pid}' is not a lowercase DNS label (a-z, 0-9, -; at most 32)")
            continue
        h = _host(host, f"peers[{i}]", problems)
        if h is None:
            continue
        if pid == own_id:
            problems.append(f"peers[{i}]: '{pid}' is this node's own id")
            continue
        if any(q.id == pid for q in peers):
            problems.append(f"peers[{i}]: '{pid}' is listed twice")
            continue
        peers.append(Peer(pid, h))
    return peers


def parse_yaml(text: str) -> dict:
    """The node file's mapping; NodeFileError when it is not YAML or not a mapping."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise NodeFileError([f"the node file is not valid YAML{where}: {problem}"]) from err
    if doc is None:
        raise NodeFileError(["the node file is empty: set node_id, lat, lon, mesh_secret and write_key (see the comments in the file)"])
    if not isinstance(doc, dict):
        raise NodeFileError([f"the node file must be a YAML mapping of fields (node_id: ..., lat: ...), not a {type(doc).__name__}"])
    return doc


def access_of(doc: dict) -> Access:
    """The parts that keep a node reachable, each taken only if its own section is valid."""
    scratch: list[str] = []
    nid = doc.get("node_id")
    return Access(
        network=_network(doc.get("network"), scratch),
        wifi=_wifi(doc.get("wifi"), []),
        ssh_authorized_keys=_ssh_keys(doc.get("ssh_authorized_keys"), []),
        node_id=nid if isinstance(nid, str) and NODE_ID_RE.match(nid) else None,
    )


def validate(doc: dict) -> NodeConfig:
    """The node's configuration; NodeFileError listing every problem."""
    problems: list[str] = []
    _unknown(doc, TOP_FIELDS, "", problems)
    nid = doc.get("node_id")
    if nid is None:
        problems.append("node_id: missing (a lowercase DNS label, e.g. node-1; unique in the mesh)")
    elif not isinstance(nid, str) or not NODE_ID_RE.match(nid):
        problems.append(f"node_id: '{nid}' is not a lowercase DNS label (a-z, 0-9, - inside; at most 32 characters)")
        nid = None
    lat = _coordinate(doc, "lat", 90, problems)
    lon = _coordinate(doc, "lon", 180, problems)
    secret = _secret(doc, "mesh_secret", problems)
    write_key = _secret(doc, "write_key", problems)
    if secret is not None and write_key is not None and secret == write_key:
        problems.append("write_key: must differ from mesh_secret (clients hold the write key; only nodes hold the mesh secret)")
    registry_password = _secret(doc, "registry_password", problems, required=False)
    if registry_password is not None:
        if ":" in registry_password or len(registry_password.encode()) > REGISTRY_PASSWORD_MAX_BYTES:
            problems.append(
                f"registry_password: must not contain ':' and must have at most {REGISTRY_PASSWORD_MAX_BYTES} bytes "
                "(it is written as user:password and hashed with bcrypt; e.g. `openssl rand -hex 32`)"
            )
            registry_password = None
        elif registry_password in (secret, write_key):
            problems.append("registry_password: must differ from mesh_secret and write_key (the operator's pushes use it)")
            registry_password = None
    address = None
    if doc.get("address") is not None:
        address = _host(doc["address"], "address", problems)
    discovery = doc.get("discovery", "static")
    if discovery == "mdns":
        problems.append(
            "discovery: mdns is not available in this image (the node's services run behind faasd's container bridge, which "
            "does not pass multicast); list the other nodes under peers"
        )
    elif discovery != "static":
        problems.append(f"discovery: '{discovery}' is not allowed (static: the peers list)")
    peers = _peers(doc.get("peers"), nid, problems)
    net = _network(doc.get("network"), problems)
    wifi = _wifi(doc.get("wifi"), problems)
    keys = _ssh_keys(doc.get("ssh_authorized_keys"), problems)
    publish = doc.get("mongodb_publish", "127.0.0.1")
    if publish not in ("127.0.0.1", "0.0.0.0"):
        problems.append(
            f"mongodb_publish: '{publish}' is not allowed (127.0.0.1: only this node; 0.0.0.0: labs that load data from outside)"
        )
    level = doc.get("log_level", "warn")
    if level not in LOG_LEVELS:
        problems.append(f"log_level: '{level}' is not allowed ({', '.join(LOG_LEVELS)})")
    peer_timeout_s = doc.get("peer_timeout_s", PEER_TIMEOUT_S_DEFAULT)
    if isinstance(peer_timeout_s, bool) or not isinstance(peer_timeout_s, int) or not 1 <= peer_timeout_s <= PEER_TIMEOUT_S_MAX:
        problems.append(
            f"peer_timeout_s: '{peer_timeout_s}' is not allowed (whole seconds, 1..{PEER_TIMEOUT_S_MAX}; "
            f"default {PEER_TIMEOUT_S_DEFAULT}; the node's gateway ends every request at 60 s)"
        )
    if problems:
        raise NodeFileError(problems)
    return NodeConfig(
        node_id=nid,  # type: ignore[arg-type]
        lat=lat,  # type: ignore[arg-type]
        lon=lon,  # type: ignore[arg-type]
        mesh_secret=secret,  # type: ignore[arg-type]
        write_key=write_key,  # type: ignore[arg-type]
        address=address,
        peers=peers,
        network=net,  # type: ignore[arg-type]
        wifi=wifi,
        ssh_authorized_keys=keys,
        mongodb_publish=publish,
        log_level=level,
        peer_timeout_s=peer_timeout_s,
        registry_password=registry_password,
    )


def load(path: str) -> NodeConfig:
    if not os.path.exists(path):
        raise NodeFileError([f"no node file at {path}"])
    with open(path, encoding="utf-8") as f:
        return validate(parse_yaml(f.read()))
