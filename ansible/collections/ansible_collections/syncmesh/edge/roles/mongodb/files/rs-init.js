// Initiates the node's single-node replica set once (change streams need one); a no-op when it
// exists. Runs inside the mongodb container, in the official image's shell (legacy `mongo` on 4.4,
// `mongosh` from 5.0), as `--quiet --eval "<this file>"`: the Ansible mongodb role
// (tasks/replica-set.yml) and the appliance's boot program (images/appliance) both send it.
// The root credentials are read from the container's /run/secrets, never from the command line.
// Prints "initiated <set>" or "already-initiated <set>"; anything else throws (non-zero exit).
(() => {
  const SECRETS = '/run/secrets';
  const NOT_YET_INITIALIZED = 94;
  // the legacy shell has cat(); mongosh has Node's fs. Written for both shells' JavaScript: the
  // legacy shell's engine (MozJS 60) has no optional chaining, and mongosh 1.0 (Node 14.17) no node:
  // biome-ignore lint/style/useNodejsImportProtocol: see above
  const read = (name) => String(typeof cat === 'function' ? cat(`${SECRETS}/${name}`) : require('fs').readFileSync(`${SECRETS}/${name}`, 'utf8')).trim();
  const admin = db.getSiblingDB('admin');
  // mongosh throws on a failed command, the legacy shell returns { ok: 0, ... }: one shape for both
  const run = (command) => {
    try {
      return admin.runCommand(command);
    } catch (e) {
      return { ok: 0, code: e.code, errmsg: String(e.message || e) };
    }
  };
  let authed;
  try {
    authed = admin.auth(read('mongodb-username'), read('mongodb-password'));
  } catch (e) {
    authed = { ok: 0, errmsg: String(e.message || e) };
  }
  // legacy: 1 or 0; mongosh: { ok: 1 } or a throw
  if (authed !== 1 && Object(authed).ok !== 1) {
    const why = Object(authed).errmsg;
    throw new Error(`rs-init: authentication as the root user failed${why ? `: ${why}` : ''}`);
  }
  const status = run({ replSetGetStatus: 1 });
  if (status.ok === 1) {
    print(`already-initiated ${status.set}`);
    return;
  }
  if (status.code !== NOT_YET_INITIALIZED) throw new Error(`rs-init: replSetGetStatus failed: ${status.errmsg || status.code}`);
  // the set's name and port as mongod was started with them (the compose file's command)
  const opts = run({ getCmdLineOpts: 1 });
  if (opts.ok !== 1) throw new Error(`rs-init: getCmdLineOpts failed: ${opts.errmsg || opts.code}`);
  const name = Object(opts.parsed.replication).replSetName;
  if (!name) throw new Error('rs-init: mongod runs without --replSet');
  const port = Object(opts.parsed.net).port || 27017;
  // the member's address is the service name every container of the node resolves
  const res = run({ replSetInitiate: { _id: name, members: [{ _id: 0, host: `mongodb:${port}` }] } });
  if (res.ok !== 1) throw new Error(`rs-init: replSetInitiate failed: ${res.errmsg || res.code}`);
  print(`initiated ${name}`);
})();
