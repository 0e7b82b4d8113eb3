/**
 * Per-function SDK sockets (MISO_FUNCTION_SOCKETS_DIR). The platform gives each stateful
 * function its own folder below that directory and mounts only that folder into the function's
 * container (on faasd: the provider, patch 0008, for functions labelled com.syncmesh.miso=true).
 * The folder's file `functions` (written by the platform, read-only for the function) lists the
 * functions whose objects it may reach: its own name first, then the ones the operator allowed.
 * The agent serves one SDK server per folder, on `<folder>/agent.sock`, that refuses every other
 * function with EDGE_MISO_FORBIDDEN: a function reaches only its own objects unless the operator
 * allows more. Folders are rescanned every SCAN_MS: new ones get a socket, changed scopes apply
 * to the next call, removed ones (a deleted function) close their server.
 */
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '@syncmesh-edge/log';
import { MisoError } from '../../errors.js';
import { sdkServerOptions } from './options.js';
import { addSdkService, type SdkHandlers, type SdkServiceHooks } from './sdk-server.js';

/** How often the directory is rescanned. */
export const SCAN_MS = 500;
/** A folder name is a function name (faasd's rules). */
const FOLDER = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** The functions a folder's socket serves, from its `functions` file; undefined while it has none. */
export function readScope(folder: string): string[] | undefined {
  let text: string;
  try {
    text = readFileSync(join(folder, 'functions'), 'utf8');
  } catch {
    return undefined;
  }
  const names = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => FOLDER.test(l));
  return names.length > 0 ? names : undefined;
}

/** The SDK handlers limited to the functions in `scope()` (read on every call). */
export function scopedHandlers(h: SdkHandlers, scope: () => readonly string[]): SdkHandlers {
  const check = (fn: string): string => {
    const allowed = scope();
    if (!allowed.includes(fn)) {
      throw new MisoError(
        'EDGE_MISO_FORBIDDEN',
        `this socket serves the function ${allowed[0]}${allowed.length > 1 ? ` (and ${allowed.slice(1).join(', ')})` : ''}; ${fn} is not allowed: ` +
          'the operator allows more with the label com.syncmesh.miso.reach',
      );
    }
    return fn;
  };
  return {
    register: (fn, replica) => h.register(check(fn), replica),
    unregister: (fn, replica) => h.unregister(check(fn), replica),
    apply: (fn, object, name, type, op, rv) => h.apply(check(fn), object, name, type, op, rv),
    read: (fn, object, name, type) => h.read(check(fn), object, name, type),
    readObject: (fn, object) => h.readObject(check(fn), object),
    delete: (fn, object, name) => h.delete(check(fn), object, name),
    listObjects: (fn) => (fn ? h.listObjects(check(fn)) : h.listObjects('').filter((o) => scope().includes(o.function))),
    status: () => {
      const s = h.status() as { functions?: { function: string }[] };
      const allowed = scope();
      return { ...s, functions: (s.functions ?? []).filter((f) => allowed.includes(f.function)) };
    },
  };
}

interface Served {
  server: grpc.Server;
  scope: string[];
}

export class FunctionSockets {
  private readonly served = new Map<string, Served>();
  private readonly binding = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly dir: string,
    private readonly handlers: SdkHandlers,
    private readonly hooks: SdkServiceHooks,
    private readonly maxMessageBytes: number,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.scan();
    this.timer = setInterval(() => this.scan(), SCAN_MS);
    this.timer.unref();
  }

  /** The functions with an open socket (tests, status). */
  functions(): string[] {
    return [...this.served.keys()].sort();
  }

  scan(): void {
    if (this.closed) return;
    let names: string[];
    try {
      names = existsSync(this.dir) ? readdirSync(this.dir).filter((n) => FOLDER.test(n)) : [];
    } catch (err) {
      this.log.warn({ err, dir: this.dir }, 'cannot read the function sockets directory');
      return;
    }
    for (const name of names) {
      const folder = join(this.dir, name);
      const scope = readScope(folder);
      const s = this.served.get(name);
      if (s) {
        if (scope) s.scope = scope;
        else this.stop(name);
        continue;
      }
      if (scope && !this.binding.has(name)) void this.open(name, folder, scope);
    }
    for (const name of this.served.keys()) if (!names.includes(name)) this.stop(name);
  }

  private async open(name: string, folder: string, scope: string[]): Promise<void> {
    this.binding.add(name);
    const served: Served = { server: new grpc.Server(sdkServerOptions(this.maxMessageBytes)), scope };
    addSdkService(
      served.server,
      scopedHandlers(this.handlers, () => served.scope),
      this.hooks,
    );
    const path = join(folder, 'agent.sock');
    try {
      rmSync(path, { force: true });
      await new Promise<void>((resolve, reject) =>
        served.server.bindAsync(`unix:${path}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
      );
      // The function may run as any user: the folder (mounted into its container only) is the
      // boundary, not the socket's mode.
      chmodSync(path, 0o666);
      if (this.closed) {
        served.server.forceShutdown();
        return;
      }
      this.served.set(name, served);
      this.log.info({ function: name, scope, socket: path }, 'function socket open');
    } catch (err) {
      served.server.forceShutdown();
      this.log.warn({ err, function: name, socket: path }, 'cannot open the function socket; retrying at the next scan');
    } finally {
      this.binding.delete(name);
    }
  }

  private stop(name: string): void {
    const s = this.served.get(name);
    if (!s) return;
    this.served.delete(name);
    s.server.forceShutdown();
    this.log.info({ function: name }, 'function socket closed (its folder is gone)');
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    for (const name of [...this.served.keys()]) this.stop(name);
  }
}
