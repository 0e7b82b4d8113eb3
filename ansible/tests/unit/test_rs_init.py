"""files/rs-init.js, the replica-set initiation the mongodb role and the appliance share: run by
Node.js in a VM context whose `db`, `print` and `cat`/`require` behave as the legacy `mongo` shell
(4.4: commands return { ok: 0 }, auth returns 1/0, cat() reads files) or as `mongosh` (commands
throw, auth returns { ok: 1 } or throws, Node's fs). No mongod runs here (none can be installed):
what is checked is the script's own logic against both shells' documented behaviour."""

import json
import pathlib
import shutil
import subprocess
import unittest

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "collections/ansible_collections/syncmesh/edge/roles/mongodb/files/rs-init.js"

# A shell stand-in: SHELL is "legacy" or "mongosh"; SERVER says how the server answers.
HARNESS = r"""
const vm = require('vm');
const fs = require('fs');
const [script, shell, server] = [fs.readFileSync(process.argv[1], 'utf8'), process.argv[2], JSON.parse(process.argv[3])];
const files = { '/run/secrets/mongodb-username': 'syncmesh\n', '/run/secrets/mongodb-password': 'pw123\n' };
const out = [], calls = [];
const failure = (res) => { const e = new Error(res.errmsg || 'command failed'); e.code = res.code; return e; };
const admin = {
  auth(user, pw) {
    calls.push({ auth: [user, pw] });
    const ok = user === 'syncmesh' && pw === server.password;
    if (shell === 'legacy') return ok ? 1 : 0;
    if (!ok) throw failure({ code: 18, errmsg: 'Authentication failed.' });
    return { ok: 1 };
  },
  runCommand(cmd) {
    calls.push(cmd);
    const name = Object.keys(cmd)[0];
    const res = server.answers[name] || { ok: 0, code: 59, errmsg: `no such command: ${name}` };
    if (shell === 'mongosh' && res.ok !== 1) throw failure(res);
    return res;
  },
};
const readFile = (path) => { if (!(path in files)) throw new Error(`no file ${path}`); return files[path]; };
const getSiblingDB = (name) => { if (name !== 'admin') throw new Error('not admin'); return admin; };
const context = { db: { getSiblingDB }, print: (s) => out.push(String(s)) };
if (shell === 'legacy') context.cat = readFile;
else context.require = (mod) => { if (mod !== 'fs') throw new Error(mod); return { readFileSync: readFile }; };
let error = null;
try { vm.runInNewContext(script, context); } catch (e) { error = String(e.message || e); }
process.stdout.write(JSON.stringify({ out, calls, error }));
"""

NOT_YET = {"ok": 0, "code": 94, "codeName": "NotYetInitialized", "errmsg": "no replset config has been received"}
OPTS = {"ok": 1, "parsed": {"replication": {"replSetName": "rs0"}, "net": {"port": 27017, "bindIpAll": True}}}


def run(shell: str, answers: dict, password: str = "pw123") -> dict:
    r = subprocess.run(
        ["node", "-e", HARNESS, str(SCRIPT), shell, json.dumps({"answers": answers, "password": password})],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    return json.loads(r.stdout)


@unittest.skipUnless(shutil.which("node"), "Node.js runs the shells' stand-ins")
class RsInit(unittest.TestCase):
    def test_initiates_a_new_set_in_both_shells(self):
        for shell in ("legacy", "mongosh"):
            with self.subTest(shell=shell):
                r = run(shell, {"replSetGetStatus": NOT_YET, "getCmdLineOpts": OPTS, "replSetInitiate": {"ok": 1}})
                self.assertIsNone(r["error"])
                self.assertEqual(r["out"], ["initiated rs0"])
                # the credentials come from /run/secrets, trimmed
                self.assertEqual(r["calls"][0], {"auth": ["syncmesh", "pw123"]})
                self.assertEqual(r["calls"][-1], {"replSetInitiate": {"_id": "rs0", "members": [{"_id": 0, "host": "mongodb:27017"}]}})

    def test_an_existing_set_is_left_alone(self):
        for shell in ("legacy", "mongosh"):
            with self.subTest(shell=shell):
                r = run(shell, {"replSetGetStatus": {"ok": 1, "set": "rs0"}})
                self.assertIsNone(r["error"])
                self.assertEqual(r["out"], ["already-initiated rs0"])
                self.assertFalse(any("replSetInitiate" in c for c in r["calls"]))

    def test_the_port_and_name_are_mongods_own(self):
        opts = {"ok": 1, "parsed": {"replication": {"replSetName": "edge"}, "net": {"port": 27018}}}
        r = run("mongosh", {"replSetGetStatus": NOT_YET, "getCmdLineOpts": opts, "replSetInitiate": {"ok": 1}})
        self.assertEqual(r["out"], ["initiated edge"])
        self.assertEqual(r["calls"][-1]["replSetInitiate"]["members"][0]["host"], "mongodb:27018")

    def test_a_wrong_password_fails_before_any_command(self):
        for shell in ("legacy", "mongosh"):
            with self.subTest(shell=shell):
                r = run(shell, {"replSetGetStatus": NOT_YET}, password="other")
                self.assertRegex(r["error"], "authentication as the root user failed")
                self.assertEqual(len(r["calls"]), 1)

    def test_mongod_without_a_replica_set_is_an_error(self):
        opts = {"ok": 1, "parsed": {"net": {"port": 27017}}}
        r = run("legacy", {"replSetGetStatus": NOT_YET, "getCmdLineOpts": opts})
        self.assertRegex(r["error"], "without --replSet")

    def test_other_status_errors_and_a_failed_initiate_are_errors(self):
        for shell in ("legacy", "mongosh"):
            with self.subTest(shell=shell):
                r = run(shell, {"replSetGetStatus": {"ok": 0, "code": 13, "errmsg": "not authorized"}})
                self.assertRegex(r["error"], "replSetGetStatus failed: not authorized")
                bad = {"ok": 0, "code": 93, "errmsg": "InvalidReplicaSetConfig"}
                r = run(shell, {"replSetGetStatus": NOT_YET, "getCmdLineOpts": OPTS, "replSetInitiate": bad})
                self.assertRegex(r["error"], "replSetInitiate failed: InvalidReplicaSetConfig")
                self.assertEqual(r["out"], [])


if __name__ == "__main__":
    unittest.main()
