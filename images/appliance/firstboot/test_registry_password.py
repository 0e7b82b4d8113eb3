"""The boot program and the node's registry password (python3 -m unittest discover -s images/appliance/firstboot):
`up` hands node-prepare.sh the node file's registry_password when configure stored one, and the status says
whether the password was given or generated on the node, never the password. node-prepare.sh itself (what it
does with the file) is tested in test_mongodb.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
# the collection's module_utils, which the boot program imports (payload.sh copies them beside it in the image)
COLLECTION = os.path.join(HERE, "..", "..", "..", "ansible", "collections", "ansible_collections", "syncmesh", "edge")
sys.path.insert(0, os.path.join(COLLECTION, "plugins", "module_utils"))

from boot import node  # noqa: E402


class RegistryPassword(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="s5a-regpw-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.password_file = os.path.join(self.tmp, "secrets", "registry-password")
        self.calls: list[dict] = []

        def sh(*argv, env=None, check=True, timeout=600):
            self.calls.append({"argv": argv, "env": env or {}})
            return subprocess.CompletedProcess(argv, 0, "", "")

        for name, value in (
            ("sh", sh),
            ("REGISTRY_PASSWORD", self.password_file),
            ("NODE_STATE", os.path.join(self.tmp, "node")),
            ("STATE", self.tmp),
            ("database_info", lambda: {"kind": "test-server"}),
        ):
            patch = mock.patch.object(node, name, value)
            patch.start()
            self.addCleanup(patch.stop)
        self.settings = {"peers": [], "mongodb_publish": "127.0.0.1", "log_level": "warn"}

    def prepare_env(self) -> dict:
        node.prepare(self.settings, "node-1", "10.0.0.11")
        (call,) = [c for c in self.calls if c["argv"][-1].endswith("node-prepare.sh")]
        return call["env"]

    def test_without_a_password_in_the_node_file_the_node_generates_one_and_says_so(self):
        self.assertNotIn("REGISTRY_PASSWORD_FILE", self.prepare_env())
        status = node.registry_status("10.0.0.11")
        self.assertEqual((status["address"], status["password"]), ("10.0.0.11:5000", "generated"))
        self.assertRegex(status["message"], r"no registry_password: the node generated one .*registry-auth")

    def test_the_node_files_password_is_handed_to_node_prepare_and_never_said(self):
        os.makedirs(os.path.dirname(self.password_file))
        with open(self.password_file, "w") as f:
            f.write("G1ven-by-the-node-file-0123456789abcdef")
        self.assertEqual(self.prepare_env()["REGISTRY_PASSWORD_FILE"], self.password_file)
        status = node.registry_status("10.0.0.11")
        self.assertEqual(status["password"], "given")
        self.assertNotIn("G1ven", json.dumps(status))


if __name__ == "__main__":
    unittest.main()
