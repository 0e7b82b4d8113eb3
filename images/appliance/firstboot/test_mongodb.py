"""MongoDB's official image in the appliance (python3 -m unittest discover -s images/appliance/firstboot):
mongo-image.sh's checks of MONGO_IMAGE (with skopeo on OCI archives made here), its rendering of
the Ansible role's compose settings, node-prepare.sh's official variant (root: real files, owners
and modes in a temporary node state), and the boot program's pull and replica-set steps against
a stand-in `ctr` on PATH. The official image itself cannot be fetched here (no registry access)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import unittest
from unittest import mock

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
MONGO_IMAGE_SH = os.path.join(REPO, "images", "appliance", "mongo-image.sh")
NODE_PREPARE = os.path.join(REPO, "images", "node", "node-prepare.sh")
COLLECTION = os.path.join(REPO, "ansible", "collections", "ansible_collections", "syncmesh", "edge")
sys.path.insert(0, os.path.join(COLLECTION, "plugins", "module_utils"))

from boot import database  # noqa: E402

REF = "docker.io/library/mongo:7.0"
CORE = ["gateway", "queue-worker", "nats-streaming", "prometheus", "mongo-test-server", "listener", "miso-agent", "registry", "syncmesh-fn"]


def oci_archive(path: str, arch: str, ref_name: str | None, prefix: str = "") -> None:
    """A minimal, valid OCI image archive (one empty layer) for linux/ARCH, its index naming REF_NAME;
    PREFIX "./" names the members as `tar -C layout .` does."""
    blobs: dict[str, bytes] = {}

    def blob(data: bytes, media_type: str) -> dict:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"mediaType": media_type, "digest": digest, "size": len(data)}

    layer_buf = io.BytesIO()
    with tarfile.open(fileobj=layer_buf, mode="w"):
        pass
    layer = blob(layer_buf.getvalue(), "application/vnd.oci.image.layer.v1.tar")
    config = blob(
        json.dumps(
            {"architecture": arch, "os": "linux", "config": {}, "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}}
        ).encode(),
        "application/vnd.oci.image.config.v1+json",
    )
    manifest = blob(
        json.dumps(
            {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "config": config, "layers": [layer]}
        ).encode(),
        "application/vnd.oci.image.manifest.v1+json",
    )
    if ref_name:
        manifest["annotations"] = {"org.opencontainers.image.ref.name": ref_name}
    files = {
        "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
        "index.json": json.dumps({"schemaVersion": 2, "manifests": [manifest]}).encode(),
        **{f"blobs/sha256/{d.split(':')[1]}": data for d, data in blobs.items()},
    }
    with tarfile.open(path, "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(prefix + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def check(arch: str, image: str, ref: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "MONGO_IMAGE": image, "MONGO_IMAGE_REF": ref}
    return subprocess.run(["bash", MONGO_IMAGE_SH, "check", arch], env=env, capture_output=True, text=True, timeout=120)


class MongoImageCheck(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="s5a-mongo-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def assert_refused(self, r: subprocess.CompletedProcess, pattern: str) -> None:
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertRegex(r.stderr, pattern)

    def test_empty_is_the_test_server(self):
        for arch in ("amd64", "arm64"):
            r = check(arch, "")
            self.assertEqual((r.returncode, r.stdout.split()), (0, ["test-server", "-", "-", "-"]), r.stderr)

    def test_pull_takes_the_roles_repository_and_the_version_for_the_target(self):
        r = check("amd64", "pull")
        self.assertEqual(r.stdout.split(), ["mongodb", "pull", REF, "7.0"], r.stderr)
        r = check("arm64", "pull")
        self.assertEqual(r.stdout.split(), ["mongodb", "pull", "docker.io/library/mongo:4.4.18", "4.4.18"], r.stderr)
        r = check("amd64", "pull:registry.example/mirror/mongo:6.0.14")
        self.assertEqual(r.stdout.split(), ["mongodb", "pull", "registry.example/mirror/mongo:6.0.14", "6.0.14"], r.stderr)

    def test_bad_values_are_refused_with_what_to_do(self):
        self.assert_refused(check("arm64", "pull:docker.io/library/mongo:7.0"), r"Pi 4.*4\.4 at most.*mongo:4\.4\.18")
        self.assert_refused(check("amd64", "pull:mongo:7.0"), "full reference")
        self.assert_refused(check("amd64", "pull:docker.io/library/mongo:latest"), "versioned tag")
        self.assert_refused(check("amd64", "pull:docker.io/library/mongo@sha256:" + "0" * 64), "not by a digest")
        self.assert_refused(check("amd64", os.path.join(self.tmp, "missing.tar")), "neither a readable OCI archive nor pull")
        self.assert_refused(check("riscv64", ""), "amd64 or arm64")
        not_oci = os.path.join(self.tmp, "not-oci.tar")
        with tarfile.open(not_oci, "w"):
            pass
        self.assert_refused(check("amd64", not_oci), "not an OCI archive")

    @unittest.skipUnless(shutil.which("skopeo"), "skopeo reads the archives (make images-tools)")
    def test_an_archive_is_read_with_skopeo(self):
        full = os.path.join(self.tmp, "full.oci.tar")
        oci_archive(full, "amd64", REF)
        r = check("amd64", full)
        self.assertEqual(r.stdout.split(), ["mongodb", "bundled", REF, "7.0"], r.stderr)
        # skopeo copy ... oci-archive:FILE:4.4.18 names a bare tag: the role's repository (and an
        # archive made with tar -C layout . names its members ./...)
        tag = os.path.join(self.tmp, "tag.oci.tar")
        oci_archive(tag, "arm64", "4.4.18", prefix="./")
        r = check("arm64", tag)
        self.assertEqual(r.stdout.split(), ["mongodb", "bundled", "docker.io/library/mongo:4.4.18", "4.4.18"], r.stderr)
        # an archive of another architecture, or naming nothing
        self.assert_refused(check("arm64", full), "linux/amd64 image; this build needs linux/arm64")
        bare = os.path.join(self.tmp, "bare.oci.tar")
        oci_archive(bare, "amd64", None)
        self.assert_refused(check("amd64", bare), "names no image reference: set MONGO_IMAGE_REF")
        r = check("amd64", bare, ref="docker.io/library/mongo:7.0.12")
        self.assertEqual(r.stdout.split(), ["mongodb", "bundled", "docker.io/library/mongo:7.0.12", "7.0.12"], r.stderr)


@unittest.skipUnless(os.geteuid() == 0, "node-prepare.sh sets owners (root)")
class NodePrepareOfficial(unittest.TestCase):
    """node-prepare.sh with MONGODB_VARIANT=official, with the settings mongo-image.sh renders."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="s5a-prep-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.images = os.path.join(self.tmp, "images")
        os.makedirs(self.images)
        for name in CORE:
            with open(os.path.join(self.images, f"{name}.ref"), "w") as f:
                f.write("0.1.0\n")
        with open(os.path.join(self.images, "mongodb.ref"), "w") as f:
            f.write(REF + "\n")
        self.faasd = os.path.join(self.tmp, "faasd")
        with open(self.faasd, "w") as f:
            f.write("#!/bin/sh\n")
        os.chmod(self.faasd, 0o755)
        self.secret = os.path.join(self.tmp, "mesh-secret")
        with open(self.secret, "w") as f:
            f.write("s" * 40)
        self.write_key = os.path.join(self.tmp, "write-key")
        with open(self.write_key, "w") as f:
            f.write("w" * 40)
        self.overrides = os.path.join(self.tmp, "mongodb-official.yaml")
        subprocess.run(["bash", MONGO_IMAGE_SH, "render", REF, self.overrides], check=True, timeout=60)
        self.state = os.path.join(self.tmp, "node")

    def prepare(self, **extra: str) -> subprocess.CompletedProcess:
        env = {
            **os.environ,
            "NODE_STATE": self.state,
            "NODE_ADDR": "10.9.0.2",
            "MESH_SECRET_FILE": self.secret,
            "WRITE_KEY_FILE": self.write_key,
            "IMAGES_DIR": self.images,
            "IMAGES_PRELOADED": "1",
            "FAASD_BIN": self.faasd,
            **extra,
        }
        return subprocess.run(["bash", NODE_PREPARE], env=env, capture_output=True, text=True, timeout=60)

    def secrets(self, name: str) -> str:
        return os.path.join(self.state, "var-lib-faasd", "secrets", name)

    def test_the_official_image_runs_as_a_replica_set_with_generated_credentials(self):
        r = self.prepare(MONGODB_VARIANT="official", MONGODB_COMPOSE_OVERRIDES=self.overrides)
        self.assertEqual(r.returncode, 0, r.stderr)
        compose = yaml.safe_load(read(os.path.join(self.state, "var-lib-faasd", "docker-compose.yaml")))
        mongodb = compose["services"]["mongodb"]
        self.assertEqual(mongodb["image"], REF)
        self.assertEqual(mongodb["user"], "999")
        self.assertEqual(mongodb["command"][:3], ["mongod", "--replSet", "rs0"])
        self.assertIn("/run/secrets/mongodb-keyfile", mongodb["command"])
        self.assertEqual(mongodb["labels"]["org.syncmesh-edge.test-only"], "false")
        self.assertEqual(mongodb["ports"], ["127.0.0.1:27017:27017"])  # kept from the node's file
        # its data, and only its own secrets (not the gateway's password or the mesh secret)
        own = ("mongodb-username", "mongodb-password", "mongodb-keyfile")
        self.assertEqual(
            [(v["source"], v["target"]) for v in mongodb["volumes"]],
            [("./mongodb", "/data/db")] + [(f"./secrets/{n}", f"/run/secrets/{n}") for n in own],
        )
        self.assertEqual(compose["services"]["gateway"]["image"], "localhost/syncmesh-edge/gateway:0.1.0")  # the rest as before
        # credentials: the official image's user (999) reads them, nobody else
        for name, length in (("mongodb-username", None), ("mongodb-password", 40), ("mongodb-keyfile", 756)):
            st = os.stat(self.secrets(name))
            self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (999, 0o400), name)
            if length:
                self.assertRegex(read(self.secrets(name)), rf"^[A-Za-z0-9]{{{length}}}$")
        password = read(self.secrets("mongodb-password"))
        uri = read(self.secrets("mongodb-uri"))
        self.assertEqual(uri, f"mongodb://syncmesh:{password}@mongodb:27017/?replicaSet=rs0&authSource=admin")
        self.assertEqual(os.stat(self.secrets("mongodb-uri")).st_uid, 10001)
        self.assertEqual(os.stat(os.path.join(self.state, "var-lib-faasd", "mongodb")).st_uid, 999)
        images = read(os.path.join(self.state, "images.list"))
        self.assertIn(f"openfaas {self.images}/mongodb.oci.tar {REF}\n", images)
        self.assertNotIn("mongo-test-server", images)
        # a restart of the node keeps the password (the data folder's root user has it)
        keyfile = read(self.secrets("mongodb-keyfile"))
        self.assertEqual(self.prepare(MONGODB_VARIANT="official", MONGODB_COMPOSE_OVERRIDES=self.overrides).returncode, 0)
        self.assertEqual(read(self.secrets("mongodb-password")), password)
        self.assertEqual(read(self.secrets("mongodb-keyfile")), keyfile)
        self.assertEqual(read(self.secrets("mongodb-uri")), uri)

    def test_the_test_server_stays_the_default(self):
        r = self.prepare()
        self.assertEqual(r.returncode, 0, r.stderr)
        text = read(os.path.join(self.state, "var-lib-faasd", "docker-compose.yaml"))
        self.assertTrue(text.startswith("# faasd's docker-compose.yaml of one Syncmesh Edge node"))  # node_stack's rendering
        mongodb = yaml.safe_load(text)["services"]["mongodb"]
        self.assertEqual(mongodb["image"], "localhost/syncmesh-edge/mongo-test-server:0.1.0")
        self.assertEqual(mongodb["labels"]["org.syncmesh-edge.test-only"], "true")
        self.assertFalse(os.path.exists(self.secrets("mongodb-password")))
        self.assertEqual(read(self.secrets("mongodb-uri")), "mongodb://mongodb:27017/?directConnection=true")

    def test_the_compose_file_is_the_golden_rendering_and_secrets_have_the_descriptions_owners(self):
        golden = json.loads(read(os.path.join(REPO, "images", "node", "golden", "values.json")))
        names = {"gateway": "IMAGE_GATEWAY", "queue-worker": "IMAGE_QUEUE_WORKER", "nats-streaming": "IMAGE_NATS_STREAMING",
                 "prometheus": "IMAGE_PROMETHEUS", "mongo-test-server": "IMAGE_MONGODB", "listener": "IMAGE_LISTENER",
                 "miso-agent": "IMAGE_MISO_AGENT", "registry": "IMAGE_REGISTRY", "syncmesh-fn": "FUNCTION_IMAGE"}  # fmt: skip
        for name, var in names.items():
            with open(os.path.join(self.images, f"{name}.ref"), "w") as f:
                f.write(golden[var].rsplit(":", 1)[1] + "\n")
        keys = {k: golden[k] for k in ("NODE_ID", "NODE_ADDR", "MISO_PEERS", "LOG_LEVEL", "MONGODB_PUBLISH")}
        r = self.prepare(**keys)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(
            read(os.path.join(self.state, "var-lib-faasd", "docker-compose.yaml")),
            read(os.path.join(REPO, "images", "node", "golden", "docker-compose.yaml")),
        )
        for name, uid, mode in (
            ("mesh-secret", 10001, 0o400),
            ("write-key", 0, 0o400),
            ("mongodb-uri", 10001, 0o400),
            ("basic-auth-password", 0, 0o644),
            ("registry-htpasswd", 10001, 0o400),
        ):
            st = os.stat(self.secrets(name))
            self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (uid, mode), name)
        self.assertEqual(read(self.secrets("write-key")), "w" * 40)
        st = os.stat(os.path.join(self.state, "var-lib-faasd", "nats"))
        self.assertEqual((st.st_uid, stat.S_IMODE(st.st_mode)), (65534, 0o755))

    def test_a_missing_short_or_reused_secret_file_fails_before_anything_changes(self):
        short = os.path.join(self.tmp, "short")
        with open(short, "w") as f:
            f.write("x" * 31)
        for extra, pattern in (
            ({"WRITE_KEY_FILE": os.path.join(self.tmp, "none")}, "WRITE_KEY_FILE must name a readable file"),
            ({"WRITE_KEY_FILE": short}, "the secret write-key .* has 31 bytes; at least 32"),
            ({"WRITE_KEY_FILE": self.secret}, "the write key .* is the mesh secret"),
        ):
            with self.subTest(extra=extra):
                r = self.prepare(**extra)
                self.assertNotEqual(r.returncode, 0)
                self.assertRegex(r.stderr, pattern)
                self.assertFalse(os.path.exists(self.state))

    def test_the_registry_password_is_provisionings_or_generated_once_and_kept(self):
        def registry() -> tuple[str, str, str]:
            auth = read(os.path.join(self.state, "registry-auth"))
            config = json.loads(read(os.path.join(self.state, "var-lib-faasd", ".docker", "config.json")))
            return auth, config["auths"]["10.9.0.2:5000"]["auth"], read(self.secrets("registry-htpasswd"))

        def verifies(password: str, htpasswd: str) -> bool:
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                import crypt  # the system's libxcrypt, as node_stack.py hashes with it

            user, hashed = htpasswd.strip().split(":", 1)
            return user == "syncmesh" and crypt.crypt(password, hashed) == hashed

        # not given: generated once (40 letters and digits) and kept across restarts
        self.assertEqual(self.prepare().returncode, 0)
        auth, pull, htpasswd = registry()
        generated = auth.removeprefix("syncmesh:")
        self.assertRegex(generated, r"^[A-Za-z0-9]{40}$")
        self.assertEqual(base64.b64decode(pull).decode(), auth)
        self.assertTrue(verifies(generated, htpasswd))
        self.assertEqual(self.prepare().returncode, 0)
        self.assertEqual(registry()[0], auth)
        # given (the appliance's node file, Ansible): it replaces the generated one everywhere
        given = os.path.join(self.tmp, "registry-password")
        with open(given, "w") as f:
            f.write("P4ssw0rd-from-provisioning.0123456789abc\n")
        r = self.prepare(REGISTRY_PASSWORD_FILE=given)
        self.assertEqual(r.returncode, 0, r.stderr)
        auth, pull, htpasswd = registry()
        self.assertEqual(auth, "syncmesh:P4ssw0rd-from-provisioning.0123456789abc")
        self.assertEqual(base64.b64decode(pull).decode(), auth)
        self.assertTrue(verifies("P4ssw0rd-from-provisioning.0123456789abc", htpasswd))
        self.assertFalse(verifies(generated, htpasswd))
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.state, "registry-auth")).st_mode), 0o600)
        self.assertNotIn("P4ssw0rd", r.stdout + r.stderr)
        # a bad one fails before anything changes, without saying the password
        for bad in ("short", "user:" + "x" * 40, "y" * 73, "z" * 20 + " " + "z" * 20):
            with self.subTest(bad=bad[:8]):
                with open(given, "w") as f:
                    f.write(bad)
                r = self.prepare(REGISTRY_PASSWORD_FILE=given)
                self.assertNotEqual(r.returncode, 0)
                self.assertRegex(r.stderr, "registry password in REGISTRY_PASSWORD_FILE .* must have 32 to 72 characters, no ':'")
                self.assertNotIn(bad, r.stderr)
                self.assertEqual(registry()[0], auth)
        r = self.prepare(REGISTRY_PASSWORD_FILE=os.path.join(self.tmp, "none"))
        self.assertRegex(r.stderr, "REGISTRY_PASSWORD_FILE must name a readable file")

    def test_bad_settings_fail_before_anything_changes(self):
        for extra, pattern in (
            ({"MONGODB_VARIANT": "official"}, "needs MONGODB_COMPOSE_OVERRIDES"),
            ({"MONGODB_VARIANT": "mongo"}, "test_server or official"),
            (
                {"MONGODB_VARIANT": "official", "MONGODB_COMPOSE_OVERRIDES": self.overrides, "MONGODB_ROOT_USERNAME": "a b"},
                "letters, digits",
            ),
        ):
            with self.subTest(extra=extra):
                r = self.prepare(**extra)
                self.assertNotEqual(r.returncode, 0)
                self.assertRegex(r.stderr, pattern)
                self.assertFalse(os.path.exists(self.state))


class BootSteps(unittest.TestCase):
    """The boot program's pull and replica-set steps (boot/database.py), with a stand-in `ctr` on PATH that records its
    calls and answers as containerd would (a failed pull, then a good one)."""

    CTR = r"""#!/bin/sh
echo "$*" >> "$CTR_LOG"
case "$*" in
  *"images ls"*) [ -f "$CTR_DIR/pulled" ] && echo "$CTR_REF"; exit 0 ;;
  *"images pull"*)
    n=$(cat "$CTR_DIR/pulls" 2>/dev/null || echo 0); echo $((n + 1)) > "$CTR_DIR/pulls"
    if [ "$n" -lt 1 ]; then echo "ctr: failed to resolve reference: dial tcp: lookup registry: no such host" >&2; exit 1; fi
    touch "$CTR_DIR/pulled"; exit 0 ;;
  *"task exec"*)
    n=$(cat "$CTR_DIR/execs" 2>/dev/null || echo 0); echo $((n + 1)) > "$CTR_DIR/execs"
    if [ "$n" -lt 1 ]; then echo "MongoNetworkError: connect ECONNREFUSED 127.0.0.1:27017" >&2; exit 1; fi
    echo "initiated rs0"; exit 0 ;;
esac
exit 2
"""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="s5a-boot-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        with open(os.path.join(self.tmp, "ctr"), "w") as f:
            f.write(self.CTR)
        os.chmod(os.path.join(self.tmp, "ctr"), 0o755)
        self.log = os.path.join(self.tmp, "ctr.log")
        env = {"PATH": f"{self.tmp}:{os.environ['PATH']}", "CTR_LOG": self.log, "CTR_DIR": self.tmp, "CTR_REF": REF}
        self.statuses: list[dict] = []
        self.shown: list[str] = []
        patch = mock.patch.dict(os.environ, env)
        patch.start()
        self.addCleanup(patch.stop)
        for name, fake in (("write_status", lambda **f: self.statuses.append(f)), ("console", self.shown.extend), ("LIB", self.tmp)):
            patch = mock.patch.object(database, name, fake)
            patch.start()
            self.addCleanup(patch.stop)

    def test_a_failed_pull_is_said_and_retried(self):
        database.pull_image(REF, "amd64", pause_s=0)
        calls = read(self.log)
        self.assertEqual(calls.count(f"images pull --platform linux/amd64 {REF}"), 2)
        said = [s["message"] for s in self.statuses]
        self.assertTrue(any(re.search(r"cannot pull MongoDB's image .*no such host.*needs internet once", m) for m in said), said)
        self.assertEqual(len(self.shown), 1)  # on the console once, not every retry
        database.pull_image(REF, "amd64", pause_s=0)  # present: nothing pulled again
        self.assertEqual(read(self.log).count("images pull"), 2)

    def test_the_replica_set_is_initiated_with_the_images_shell(self):
        os.makedirs(os.path.join(self.tmp, "node"))
        with open(os.path.join(self.tmp, "node", "mongodb-rs-init.js"), "w") as f:
            f.write("print('x')")
        database.initiate_replica_set({"version": "4.4.18"}, pause_s=0)
        calls = read(self.log).splitlines()
        self.assertEqual(len(calls), 2)  # refused once (mongod starting), then initiated
        self.assertRegex(calls[-1], r"^-n openfaas task exec --exec-id rs-init-\d+-2 mongodb mongo --quiet --eval print\('x'\)$")
        database.initiate_replica_set({"version": "7.0"}, pause_s=0)
        self.assertIn(" mongodb mongosh --quiet ", read(self.log).splitlines()[-1])
