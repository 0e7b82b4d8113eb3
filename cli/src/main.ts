#!/usr/bin/env node
/**
 * syncmesh: the operator command line of a Syncmesh Edge mesh (bin/syncmesh runs this).
 * Parses the verb and its options, runs it, prints its text or, with --json, one JSON document on
 * stdout (an error too), problems and errors on stderr, and exits with the project's one table of
 * exit codes (lib/log's EXIT: 0 done, 1 failed, 64 usage, 78 configuration; errors.ts).
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EXIT } from '@syncmesh-edge/log/exit';
import { mainHelp, numberOption, parseVerb, verbHelp } from './args.js';
import { loadConfig } from './config.js';
import { makeContext } from './context.js';
import { CliError } from './errors.js';
import { VERBS } from './verbs.js';
import { VERSION } from './version.js';

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

const stdio: Io = { out: (t) => process.stdout.write(t), err: (t) => process.stderr.write(t) };

/** Runs one command line; resolves with the exit status. */
export async function runCli(argv: readonly string[], env: Record<string, string | undefined> = process.env, io: Io = stdio): Promise<number> {
  const json = argv.includes('--json');
  const fail = (err: CliError): number => {
    if (json) io.out(`${JSON.stringify({ error: err.toJSON() })}\n`);
    io.err(`syncmesh: ${err.code}: ${err.message}\n${err.hint ? `  what to do: ${err.hint}\n` : ''}`);
    return err.exitCode;
  };
  try {
    const [verbName, ...rest] = argv;
    if (verbName === undefined || verbName === '--help' || verbName === '-h' || verbName === 'help') {
      io.out(mainHelp(VERBS.map((v) => v.spec)));
      return verbName === undefined ? EXIT.USAGE : EXIT.OK;
    }
    if (verbName === '--version') {
      io.out(`syncmesh ${VERSION}\n`);
      return EXIT.OK;
    }
    const verb = VERBS.find((v) => v.spec.name === verbName);
    if (!verb) {
      throw new CliError('EDGE_CLI_USAGE', `unknown verb '${verbName}'`, { hint: `one of ${VERBS.map((v) => v.spec.name).join(', ')} (syncmesh --help)` });
    }
    const args = parseVerb(verb.spec, rest);
    if (args.values['help']) {
      io.out(verbHelp(verb.spec));
      return EXIT.OK;
    }
    const config = loadConfig(env);
    const ctx = makeContext(config, {
      json,
      meshFile: (args.values['mesh'] as string | undefined) ?? config.meshFile,
      timeoutMs: numberOption(verb.spec.name, 'timeout-ms', args.values['timeout-ms'], { min: 100, max: 600_000, integer: true }) ?? config.timeoutMs,
    });
    const outcome = await verb.run(ctx, args);
    io.out(json ? `${JSON.stringify(outcome.result)}\n` : outcome.text ? `${outcome.text}\n` : '');
    for (const p of outcome.problems ?? []) io.err(`syncmesh: ${p}\n`);
    return outcome.code;
  } catch (err) {
    if (err instanceof CliError) return fail(err);
    io.err(`syncmesh: unexpected error (a bug: please report it with the command line): ${(err as Error).stack ?? String(err)}\n`);
    return EXIT.FAILED;
  }
}

// Run when executed (bin/syncmesh, node dist/src/main.js), not when imported by the tests.
const self = fileURLToPath(import.meta.url);
if (process.argv[1] && realpathSync(process.argv[1]) === self) {
  // Exit as soon as the output is written: a request given up at its deadline can leave a TCP
  // connect pending (a node whose packets are dropped), which would keep the process up to the
  // socket's own connect timeout (10 s in undici) after everything was said.
  const exit = (code: number) => process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
  runCli(process.argv.slice(2)).then(exit, (err: unknown) => {
    process.stderr.write(`syncmesh: ${String(err)}\n`);
    exit(EXIT.FAILED);
  });
}
