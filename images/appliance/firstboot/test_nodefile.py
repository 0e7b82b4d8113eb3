"""Unit tests of the node file's validator (python3 -m unittest discover -s images/appliance/firstboot)."""

from __future__ import annotations

import os
import tempfile
import unittest

import nodefile

SECRET = "a" * 64
KEY = "b" * 64
GOOD = f"""
node_id: node-1
lat: 42.69
lon: 23.32
mesh_secret: "{SECRET}"
write_key: "{KEY}"
peers: [node-2@10.0.0.12, node-3@edge-3.example.org]
network: {{address: 10.0.0.11/24, gateway: 10.0.0.1, dns: [10.0.0.1]}}
ssh_authorized_keys: [ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOq5 me@laptop]
"""


def problems(text: str) -> list[str]:
    try:
        nodefile.validate(nodefile.parse_yaml(text))
    except nodefile.NodeFileError as err:
        return err.problems
    return []


class NodeFileTest(unittest.TestCase):
    def test_valid_file_gives_the_config(self):
        cfg = nodefile.validate(nodefile.parse_yaml(GOOD))
        self.assertEqual(cfg.node_id, "node-1")
        self.assertEqual([(p.id, p.host) for p in cfg.peers], [("node-2", "10.0.0.12"), ("node-3", "edge-3.example.org")])
        self.assertEqual(cfg.network.address, "10.0.0.11/24")
        self.assertEqual(cfg.mongodb_publish, "127.0.0.1")
        self.assertEqual(cfg.peer_timeout_s, 20)
        self.assertNotIn(SECRET, repr(cfg))

    def test_interface_patterns_as_a_string_or_a_list(self):
        for given in ("'en* eth*'", "[en*, eth*]"):
            cfg = nodefile.validate(nodefile.parse_yaml(GOOD.replace("dns: [10.0.0.1]}", f"dns: [10.0.0.1], interface: {given}}}")))
            self.assertEqual(cfg.network.interface, "en* eth*", given)
        for bad in ("[]", "[en0, 'a b']", "null", "[1]"):
            got = problems(GOOD.replace("dns: [10.0.0.1]}", f"dns: [10.0.0.1], interface: {bad}}}"))
            self.assertEqual(len(got), 1, (bad, got))
            self.assertTrue(got[0].startswith("network.interface: must be interface names or patterns"), got)

    def test_peer_timeout_is_whole_seconds_within_limits(self):
        self.assertEqual(nodefile.validate(nodefile.parse_yaml(GOOD + "peer_timeout_s: 45\n")).peer_timeout_s, 45)
        for bad in ("0", "46", "2.5", "true", "'20'"):
            got = problems(GOOD + f"peer_timeout_s: {bad}\n")
            self.assertEqual(len(got), 1, (bad, got))
            self.assertRegex(
                got[0],
                r"^peer_timeout_s: '.*' is not allowed \(whole seconds, 1\.\.45; default 20; "
                r"the node.s gateway ends every request at 60 s\)$",
            )

    def test_missing_lat_and_short_secret_are_both_reported(self):
        text = GOOD.replace("lat: 42.69\n", "").replace(SECRET, "too-short")
        got = problems(text)
        self.assertIn("lat: missing (the node's latitude in degrees, -90..90)", got)
        self.assertTrue(any(p.startswith("mesh_secret: too short (9 bytes; at least 32") for p in got), got)

    def test_malformed_yaml_names_the_line(self):
        got = problems("node_id: node-1\nlat: [42\n")
        self.assertEqual(len(got), 1)
        self.assertRegex(got[0], r"^the node file is not valid YAML at line \d+")

    def test_the_shipped_template_is_not_configured(self):
        with open(os.path.join(os.path.dirname(__file__), "..", "vm", "syncmesh-node.yaml"), encoding="utf-8") as f:
            self.assertRegex(problems(f.read())[0], "^the node file is empty")

    def test_unknown_fields_and_bad_values_are_refused(self):
        got = problems(GOOD + "latitude: 1\nmongodb_publish: 1.2.3.4\ndiscovery: mdns\n")
        self.assertTrue(any(p.startswith("latitude: unknown field") for p in got), got)
        self.assertTrue(any(p.startswith("mongodb_publish:") for p in got), got)
        self.assertTrue(any(p.startswith("discovery: mdns is not available") for p in got), got)

    def test_peers_and_network_are_checked(self):
        text = GOOD.replace("[node-2@10.0.0.12, node-3@edge-3.example.org]", "[node-1@10.0.0.11, node2, Node-3@x]")
        text = text.replace("10.0.0.11/24", "10.0.0.300/24")
        got = problems(text)
        self.assertIn("peers[0]: 'node-1' is this node's own id", got)
        self.assertIn("peers[1]: 'node2' is not node-id@address (e.g. node-2@10.0.0.12)", got)
        self.assertTrue(any(p.startswith("peers[2]: node id 'Node-3'") for p in got), got)
        self.assertTrue(any(p.startswith("network.address: '10.0.0.300/24'") for p in got), got)

    def test_secret_file_and_same_key(self):
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write(SECRET + "\n")
        try:
            text = GOOD.replace(f'mesh_secret: "{SECRET}"', f"mesh_secret_file: {f.name}").replace(KEY, SECRET)
            self.assertEqual(
                problems(text), ["write_key: must differ from mesh_secret (clients hold the write key; only nodes hold the mesh secret)"]
            )
        finally:
            os.unlink(f.name)

    def test_the_registry_password_is_optional_and_checked(self):
        self.assertIsNone(nodefile.validate(nodefile.parse_yaml(GOOD)).registry_password)  # the node generates one
        password = "R" * 40
        cfg = nodefile.validate(nodefile.parse_yaml(GOOD + f'registry_password: "{password}"\n'))
        self.assertEqual(cfg.registry_password, password)
        self.assertNotIn(password, repr(cfg))
        with tempfile.NamedTemporaryFile("w", delete=False) as f:
            f.write(password + "\n")
        try:
            cfg = nodefile.validate(nodefile.parse_yaml(GOOD + f"registry_password_file: {f.name}\n"))
            self.assertEqual(cfg.registry_password, password)
        finally:
            os.unlink(f.name)
        for bad, want in (
            ("Xq7pZ", "registry_password: too short (5 bytes; at least 32"),
            ("a:" + "b" * 40, "registry_password: must not contain ':' and must have at most 72 bytes"),
            ("c" * 73, "registry_password: must not contain ':' and must have at most 72 bytes"),
            (SECRET, "registry_password: must differ from mesh_secret and write_key"),
            ("d" * 20 + " " + "d" * 20, "registry_password: must not contain white space"),
        ):
            got = problems(GOOD + f'registry_password: "{bad}"\n')
            self.assertEqual(len(got), 1, (bad, got))
            self.assertTrue(got[0].startswith(want), (bad, got))
            self.assertNotIn(bad, got[0])

    def test_access_parts_apply_when_the_rest_is_wrong(self):
        doc = nodefile.parse_yaml(GOOD.replace("lat: 42.69\n", ""))
        access = nodefile.access_of(doc)
        self.assertEqual(access.network.address, "10.0.0.11/24")
        self.assertEqual(len(access.ssh_authorized_keys), 1)
        self.assertEqual(access.node_id, "node-1")


if __name__ == "__main__":
    unittest.main()
