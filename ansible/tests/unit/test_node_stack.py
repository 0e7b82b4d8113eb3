"""node_stack - the one renderer of a node's description (images/node/node.yml) against the golden
rendering (images/node/golden/), its refusals, and the roles' own tasks rendering the same bytes
(stdlib unittest; the role path needs ansible-playbook beside this Python, as in make test-ansible)."""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

ANSIBLE = pathlib.Path(__file__).resolve().parents[2]
REPO = ANSIBLE.parent
MODULE_UTILS = ANSIBLE / "collections/ansible_collections/syncmesh/edge/plugins/module_utils"
sys.path.insert(0, str(MODULE_UTILS))
import node_stack  # noqa: E402

NODE = REPO / "images/node"
GOLDEN = NODE / "golden"


def read(path: pathlib.Path) -> str:
    return path.read_text(encoding="utf-8")


def golden_values() -> dict:
    return json.loads(read(GOLDEN / "values.json"))


def description() -> dict:
    return node_stack.load(read(NODE / "node.yml"))


class Golden(unittest.TestCase):
    def test_the_compose_file_is_the_golden_one(self):
        self.assertEqual(node_stack.compose(description(), golden_values()), read(GOLDEN / "docker-compose.yaml"))

    def test_the_functions_are_the_golden_ones(self):
        self.assertEqual(node_stack.functions_json(node_stack.functions(description(), golden_values())), read(GOLDEN / "functions.json"))

    def test_the_program_renders_the_same_bytes(self):
        for what in ("compose", "functions"):
            with self.subTest(what=what):
                r = subprocess.run(
                    [
                        sys.executable,
                        str(MODULE_UTILS / "node_stack.py"),
                        what,
                        "--description",
                        str(NODE / "node.yml"),
                        "--values",
                        str(GOLDEN / "values.json"),
                    ],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                self.assertEqual(r.stdout, read(GOLDEN / ("docker-compose.yaml" if what == "compose" else "functions.json")))

    def test_secrets_are_mounted_from_faasds_folder_and_never_in_env(self):
        doc = node_stack.compose_doc(description(), golden_values())
        listener = doc["services"]["listener"]
        self.assertIn({"type": "bind", "source": "./secrets/mongodb-uri", "target": "/run/secrets/mongodb-uri"}, listener["volumes"])
        self.assertIn("MONGODB_URI_FILE=/run/secrets/mongodb-uri", listener["environment"])
        self.assertFalse(any(e.startswith("MONGODB_URI=") for e in listener["environment"]))
        fn = node_stack.functions(description(), golden_values())[0]
        self.assertEqual(fn["secrets"], ["mesh-secret", "write-key", "mongodb-uri"])
        self.assertNotIn("envProcess", fn)  # the image's own fprocess runs

    def test_overrides_merge_maps_and_replace_the_rest(self):
        doc = node_stack.compose_doc(
            description(), golden_values(), [{"services": {"mongodb": {"user": "999", "command": ["mongod"], "labels": {"extra": "1"}}}}]
        )
        mongodb = doc["services"]["mongodb"]
        self.assertEqual((mongodb["user"], mongodb["command"]), ("999", ["mongod"]))
        self.assertEqual(mongodb["labels"], {"org.syncmesh-edge.test-only": "true", "extra": "1"})

    def test_secrets_and_volumes_list_owner_and_mode(self):
        secrets = {s["name"]: s for s in node_stack.secrets(description())}
        self.assertEqual(
            secrets["mesh-secret"], {"name": "mesh-secret", "owner": 10001, "mode": "0400", "file": "MESH_SECRET_FILE", "min_bytes": 32}
        )
        self.assertEqual(secrets["basic-auth-user"]["file"], None)
        self.assertIn({"name": "nats", "owner": 65534, "mode": "0755"}, node_stack.volumes(description()))


BASE = """
inputs: {IMAGE: an image, NODE_ID: the id}
secrets: {mesh-secret: {owner: 10001, mode: "0400"}}
volumes: {data: {owner: 10001, mode: "0750"}}
services:
  svc: {image: "${IMAGE}", environment: ["ID=${NODE_ID}"], secrets: [mesh-secret], volumes: ["data:/data"]}
functions:
  fn: {image: "${IMAGE}", fprocess: node main.js, environment: {ID: "${NODE_ID}", N: 5}, secrets: [mesh-secret]}
"""


class Refusals(unittest.TestCase):
    def problems(self, fn) -> str:
        with self.assertRaises(node_stack.NodeStackError) as ctx:
            fn()
        return "; ".join(ctx.exception.problems)

    def test_an_unknown_placeholder_is_refused_naming_it(self):
        text = BASE.replace('"ID=${NODE_ID}"', '"ID=${NODE_IDD}"')
        self.assertRegex(self.problems(lambda: node_stack.load(text)), r"services\.svc\.environment\.0: \$\{NODE_IDD\} is not an input")

    def test_an_input_without_a_value_and_a_value_that_is_not_an_input_are_refused(self):
        desc = node_stack.load(BASE)
        self.assertRegex(
            self.problems(lambda: node_stack.compose(desc, {"IMAGE": "x"})), r"needs \$\{NODE_ID\} \(the id\), which has no value"
        )
        self.assertRegex(
            self.problems(lambda: node_stack.functions(desc, {"IMAGE": "x", "NODE_ID": "n", "NODE_IDD": "n"})),
            r"value NODE_IDD: not an input",
        )
        self.assertRegex(
            self.problems(lambda: node_stack.functions(desc, {"IMAGE": "x", "NODE_ID": True})), r"value NODE_ID: text or a number"
        )

    def test_values_are_text_and_fprocess_becomes_env_process(self):
        [fn] = node_stack.functions(node_stack.load(BASE), {"IMAGE": "img", "NODE_ID": 7})
        self.assertEqual(fn["envProcess"], "node main.js")
        self.assertEqual(fn["envVars"], {"ID": "7", "N": "5"})

    def test_a_bad_function_is_refused_with_every_problem(self):
        text = BASE.replace("secrets: [mesh-secret]}", "secrets: [Mesh_Secret, other], limits: {memory: lots}, replicas: 3}")
        problems = self.problems(lambda: node_stack.load(text))
        self.assertIn("functions.fn.secrets.0: a lowercase DNS label", problems)
        self.assertIn("functions.fn.secrets.1: 'other' is not one of the description's secrets", problems)
        self.assertIn("functions.fn.limits.memory: a quantity like 128Mi", problems)
        self.assertIn("functions.fn.replicas: not allowed", problems)

    def test_a_service_may_mount_only_declared_secrets_and_volumes(self):
        text = BASE.replace("secrets: [mesh-secret], volumes", "secrets: [nope], volumes").replace('"data:/data"', '"other:/data"')
        problems = self.problems(lambda: node_stack.load(text))
        self.assertIn("services.svc.secrets.0: 'nope' is not one of the description's secrets", problems)
        self.assertIn("services.svc.volumes.0: 'other:/data'", problems)

    def test_text_that_is_not_a_description_is_refused(self):
        self.assertRegex(self.problems(lambda: node_stack.load("functions: [unclosed")), "not YAML")
        self.assertRegex(self.problems(lambda: node_stack.load("- a list")), "must be a mapping")
        self.assertRegex(self.problems(lambda: node_stack.load("stack: {}")), "stack: not a section")
        self.assertRegex(
            self.problems(lambda: node_stack.load(BASE.replace('mode: "0400"', "mode: 400"))), r"secrets\.mesh-secret\.mode: an octal mode"
        )

    def test_the_program_says_what_is_wrong_and_exits_1(self):
        r = subprocess.run(
            [sys.executable, str(MODULE_UTILS / "node_stack.py"), "functions", "--description", "-", "--value", "IMAGE=x"],
            input=BASE,
            capture_output=True,
            text=True,
        )
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout, "")
        self.assertIn("node_stack: functions.fn.environment.ID: needs ${NODE_ID}", r.stderr)


PLAYBOOK = shutil.which("ansible-playbook", path=os.path.dirname(sys.executable))


@unittest.skipUnless(PLAYBOOK, f"ansible-playbook is not beside {sys.executable} (make test-ansible runs this with the venv's Python)")
class RolePath(unittest.TestCase):
    """The faasd role's compose.yml and the syncmesh_node role's deployment.yml on the golden input."""

    def test_the_roles_render_the_golden_bytes(self):
        with tempfile.TemporaryDirectory(prefix="node-stack-") as tmp:
            bundle, out = pathlib.Path(tmp, "bundle"), pathlib.Path(tmp, "out")
            (bundle / "node").mkdir(parents=True)
            out.mkdir()
            shutil.copy(NODE / "node.yml", bundle / "node" / "node.yml")
            env = {**os.environ, "ANSIBLE_CONFIG": str(ANSIBLE / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
            r = subprocess.run(
                [PLAYBOOK, str(ANSIBLE / "tests/node_stack/golden.yml"), "-e", f"bundle_dir={bundle} golden_dir={GOLDEN} out_dir={out}"],
                capture_output=True,
                text=True,
                env=env,
                cwd=ANSIBLE,
            )
            self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-2000:])
            self.assertEqual(read(out / "docker-compose.yaml"), read(GOLDEN / "docker-compose.yaml"))
            self.assertEqual(read(out / "functions.json"), read(GOLDEN / "functions.json"))
            self.assertEqual(json.loads(read(out / "deployment.json")), json.loads(read(GOLDEN / "functions.json"))[0])


if __name__ == "__main__":
    unittest.main()
