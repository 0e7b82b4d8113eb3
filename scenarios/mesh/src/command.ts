/**
 * What the mesh's programs share (cli.ts and the benchmarks in ../bench): progress lines on
 * stderr, Ctrl-C and SIGTERM as an abort signal, and the exit: the code main returns, or 1 with
 * one line naming the error's code.
 */
import { LabError } from '@syncmesh-edge/lab';
import { MeshError } from './errors.js';

/** A progress line on stderr: `[mesh HH:MM:SS] message`. */
export function progress(message: string): void {
  process.stderr.write(`[mesh ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** Runs `work` with a signal that Ctrl-C (SIGINT) and SIGTERM abort, saying `message`. */
export async function interruptible(message: string, work: (signal: AbortSignal) => Promise<number>): Promise<number> {
  const ac = new AbortController();
  const onSignal = () => {
    progress(message);
    ac.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await work(ac.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** Runs a program's main with the process's arguments and sets the exit code from its result or error. */
export function runMain(main: (argv: string[]) => Promise<number>): void {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      if (err instanceof MeshError || err instanceof LabError) process.stderr.write(`mesh: ${err.code}: ${err.message}\n`);
      else process.stderr.write(`mesh: ${(err as Error).stack ?? String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
