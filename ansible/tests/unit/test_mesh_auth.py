"""mesh_auth - v2 signatures match the golden vector pinned in lib/mesh-auth (stdlib unittest)."""

import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "collections/ansible_collections/syncmesh/edge/plugins/module_utils"))
import hashlib  # noqa: E402
import hmac  # noqa: E402

from mesh_auth import sign_v1, sign_v2  # noqa: E402


class SignV2(unittest.TestCase):
    def test_golden_vector(self):
        headers = sign_v2(
            "golden-secret-golden-secret-golden-secret",
            "POST",
            "/replicate",
            "node-a",
            "node-b",
            b'{"a":1}',
            timestamp_ms=1700000000000,
            nonce="00112233445566778899aabbccddeeff",
        )
        self.assertEqual(headers["x-syncmesh-signature"], "v2=5f278904a1113ffd0378281b7939607162ed3ac1edb7daa0338701e94a6a9958")

    def test_v1_matches_the_function(self):
        h = sign_v1("s" * 32, b'{"a":1}', timestamp_ms=1700000000000)
        expected = hmac.new(b"s" * 32, b'v1:1700000000000:{"a":1}', hashlib.sha256).hexdigest()
        self.assertEqual(h, {"x-syncmesh-timestamp": "1700000000000", "x-syncmesh-signature": "v1=" + expected})

    def test_short_secret_refused(self):
        with self.assertRaisesRegex(ValueError, "32 bytes"):
            sign_v2("short", "POST", "/", "a", "b", b"")


if __name__ == "__main__":
    unittest.main()
