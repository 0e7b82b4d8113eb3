#!/usr/bin/env node
/**
 * misoctl: operate the node's MISO agent over its local SDK socket.
 *
 *   misoctl peers                                  peers, liveness and the functions they run
 *   misoctl functions                              which nodes run which function
 *   misoctl objects [function]                     objects and their CRDT values
 *   misoctl get <function> <object> [name]         read one CRDT or a whole object
 *   misoctl apply <function> <object> <name> <type> '<op json>'
 *   misoctl delete <function> <object> [name]
 *   misoctl stats                                  replication bytes, messages and lag per peer
 *
 * Options: --socket <path|host:port> (default $MISO_SDK_SOCKET or /run/miso/agent.sock),
 * --json (machine-readable output), --deadline-ms <n> (default 5000).
 * Exit codes: 0 ok, 1 the agent refused or failed (its error code is printed), 2 usage.
 */
import { MisoClient, MisoSdkError, type AgentStatus } from '@syncmesh-edge/miso-sdk';

const USAGE = `usage: misoctl [--socket S] [--json] <peers|functions|objects|get|apply|delete|stats> [args]`;

interface Opts {
  socket: string;
  json: boolean;
  deadlineMs: number;
  args: string[];
}

function parseArgs(argv: string[], env: Record<string, string | undefined>): Opts {
  const o: Opts = { socket: env['MISO_SDK_SOCKET'] ?? '/run/miso/agent.sock', json: false, deadlineMs: 5000, args: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--json') o.json = true;
    else if (a === '--socket') o.socket = argv[++i] ?? '';
    else if (a === '--deadline-ms') o.deadlineMs = Number(argv[++i]);
    else o.args.push(a);
  }
  return o;
}

/** Renders rows as an aligned text table. */
function table(head: string[], rows: (string | number | boolean)[][]): string {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const w = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => c.padEnd(w[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function kb(n: number): string {
  return n < 10_240 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`;
}

function renderPeers(st: AgentStatus): string {
  return table(
    ['NODE', 'ADDRESS', 'CONNECTED', 'LAST HEARD', 'FUNCTIONS'],
    st.peers.map((p) => [p.node_id, p.address, p.connected, `${p.last_heard_ms_ago} ms ago`, p.functions.join(',')]),
  );
}

function renderStats(st: AgentStatus): string {
  return table(
    ['PEER', 'BYTES OUT', 'BYTES IN', 'MSGS OUT', 'MSGS IN', 'LAG LAST', 'LAG MEAN', 'UNACKED'],
    st.peers.map((p) => [
      p.node_id,
      kb(p.bytes_sent),
      kb(p.bytes_received),
      p.messages_sent,
      p.messages_received,
      `${p.lag_last_ms.toFixed(1)} ms`,
      `${p.lag_mean_ms.toFixed(1)} ms`,
      p.unacked,
    ]),
  );
}

async function run(o: Opts, out: (s: string) => void): Promise<void> {
  const [cmd, ...rest] = o.args;
  const c = new MisoClient(o.socket, o.deadlineMs);
  const print = (v: unknown, text: () => string) => out(o.json ? JSON.stringify(v, null, 2) : text());
  try {
    switch (cmd) {
      case 'peers': {
        const st = await c.status();
        return print(st.peers, () => `node ${st.node_id} (replica ${st.replica_id})\n${renderPeers(st)}`);
      }
      case 'functions': {
        const st = await c.status();
        return print(st.functions, () =>
          table(
            ['FUNCTION', 'LOCAL REPLICAS', 'NODES'],
            st.functions.map((f) => [f.function, f.local_replicas, f.nodes.join(',')]),
          ),
        );
      }
      case 'objects': {
        const objs = await c.listObjects(rest[0] ?? '');
        return print(objs, () =>
          table(
            ['FUNCTION', 'OBJECT', 'CRDT', 'TYPE', 'VALUE'],
            objs.flatMap((ob) => ob.crdts.map((x) => [ob.function, ob.object, x.name, x.type, JSON.stringify(x.value)])),
          ),
        );
      }
      case 'get': {
        const [fn, object, name] = rest;
        if (!fn || !object) throw usage('get <function> <object> [name]');
        if (name) {
          const r = await c.read(fn, object, name);
          return print(r, () => `${name} (${r.type}) = ${JSON.stringify(r.value)}`);
        }
        const all = await c.readObject(fn, object);
        return print(all, () =>
          table(
            ['CRDT', 'TYPE', 'VALUE'],
            all.map((x) => [x.name, x.type, JSON.stringify(x.value)]),
          ),
        );
      }
      case 'apply': {
        const [fn, object, name, type, opJson] = rest;
        if (!fn || !object || !name || !type || !opJson) throw usage(`apply <function> <object> <name> <type> '<op json>'`);
        let op: unknown;
        try {
          op = JSON.parse(opJson);
        } catch (err) {
          throw usage(`the op is not JSON (${(err as Error).message}), e.g. '{"op":"add","n":1}'`);
        }
        const v = await c.apply(fn, object, name, type, op, true);
        return print({ value: v }, () => `${name} (${type}) = ${JSON.stringify(v)}`);
      }
      case 'delete': {
        const [fn, object, name] = rest;
        if (!fn || !object) throw usage('delete <function> <object> [name]');
        const n = await c.delete(fn, object, name ?? '');
        return print({ deleted: n }, () => `deleted ${n} CRDT(s)`);
      }
      case 'stats': {
        const st = await c.status();
        return print(st, () => `node ${st.node_id}: ${st.crdts} CRDTs, ${st.persist_pending} waiting to persist\n${renderStats(st)}`);
      }
      default:
        throw usage(cmd ? `unknown command '${cmd}'` : 'a command is required');
    }
  } finally {
    c.close();
  }
}

class UsageError extends Error {}
function usage(msg: string): UsageError {
  return new UsageError(`${msg}\n${USAGE}`);
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2), process.env);
  try {
    await run(o, (s) => process.stdout.write(`${s}\n`));
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`misoctl: ${err.message}\n`);
      process.exit(2);
    }
    if (err instanceof MisoSdkError) {
      process.stderr.write(`misoctl: ${err.code}: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

void main();
