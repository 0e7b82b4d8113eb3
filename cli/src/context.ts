/** What every verb gets: the configuration, the options every verb takes, the mesh (read once). */
import type { Parsed, VerbSpec } from './args.js';
import type { CliConfig } from './config.js';
import { readMesh, type MeshDescription } from './mesh-file.js';
import type { VerbOutcome } from './output.js';

export interface Context {
  readonly config: CliConfig;
  readonly json: boolean;
  readonly timeoutMs: number;
  readonly meshFile: string;
  /** The mesh description, read and checked on first use. */
  mesh(): MeshDescription;
  /** A progress line on stderr (a TTY: rewritten in place; otherwise one line each call). */
  progress(line: string, done?: boolean): void;
}

export interface Verb {
  readonly spec: VerbSpec;
  run(ctx: Context, args: Parsed): Promise<VerbOutcome>;
}

export function makeContext(config: CliConfig, opts: { json: boolean; timeoutMs: number; meshFile: string }): Context {
  let mesh: MeshDescription | undefined;
  const tty = process.stderr.isTTY === true;
  let lastLength = 0;
  return {
    config,
    ...opts,
    mesh: () => (mesh ??= readMesh(opts.meshFile)),
    progress(line, done = false) {
      if (tty) {
        process.stderr.write(`\r${line.padEnd(lastLength)}${done ? '\n' : ''}`);
        lastLength = done ? 0 : line.length;
      } else {
        process.stderr.write(`${line}\n`);
      }
    },
  };
}
