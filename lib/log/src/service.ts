/**
 * The one way a long-running service starts and stops (the Syncmesh function, the listener, the
 * MISO agent, the async worker): configuration, the root logger, SIGTERM/SIGINT, one drain
 * deadline, one log line on start and on stop, and the one table of exit codes (`EXIT`, from
 * exit.ts). Re-exports the one shape of an HTTP error answer of the services' side endpoints
 * (health, readiness, metrics, status: `replyError`, from http.ts).
 */
import { EXIT } from './exit.js';
import { createLogger, type Logger } from './log.js';

export { EXIT } from './exit.js';
export { replyError, replyJson } from './http.js';

/** How long a service drains in-flight work after SIGTERM/SIGINT unless its config says otherwise. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 10_000;
/**
 * After the drain deadline, closing the clients (a database flush, the MongoDB client) gets this
 * long before the process exits FAILED anyway.
 */
export const CLOSE_GRACE_MS = 5_000;

/**
 * The error codes that say "configuration": a thrown one exits CONFIG. Each component's
 * `EDGE_<SVC>_CONFIG`, and lib/mesh-auth's weak secret and bad node id.
 */
const CONFIG_CODE = /^EDGE_(?:[A-Z0-9_]*_CONFIG|AUTH_WEAK_SECRET|AUTH_BAD_NODE_ID)$/;

/**
 * The exit code an error stands for: its own numeric `exitCode` when it carries one (the listener's
 * fatal verdicts), CONFIG for a coded configuration error (`EDGE_<SVC>_CONFIG`, a weak mesh secret, a
 * bad node id), else FAILED.
 */
export function exitCodeOf(err: unknown): number {
  if (err && typeof err === 'object') {
    const { exitCode, code } = err as { exitCode?: unknown; code?: unknown };
    if (typeof exitCode === 'number' && Number.isInteger(exitCode)) return exitCode;
    if (typeof code === 'string' && CONFIG_CODE.test(code)) return EXIT.CONFIG;
  }
  return EXIT.FAILED;
}

/** `{ code }` of a coded error, for its log line. */
function codeOf(err: unknown): { code?: string } {
  const code = err && typeof err === 'object' ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? { code } : {};
}

/** A started service. */
export interface Running {
  /**
   * Settles when the service ends on its own: resolving stops it with OK, rejecting with the
   * error's exit code (exitCodeOf). Absent: it runs until a signal.
   */
  readonly done?: Promise<unknown>;
  /** Drains in-flight work (by the drain deadline) and closes everything. Called once. */
  stop(): Promise<void>;
}

export interface StartContext<C> {
  readonly config: C;
  readonly log: Logger;
  /** Aborted when the service starts stopping: background loops (connect retries) end. */
  readonly stopping: AbortSignal;
  /** Stops the service as a signal would (e.g. the agent when its parent closes stdin). */
  shutdown(reason: string): void;
}

export interface ServiceSpec<C> {
  /** Bound as `svc` on every log line. */
  svc: string;
  /** Where the log lines go: 'stderr' for a process whose stdout carries something else. */
  destination?: 'stdout' | 'stderr';
  /** Reads and validates the environment; any error it throws exits CONFIG. */
  loadConfig(): C;
  /** The root logger's level and node id. */
  logger(config: C): { level: string; node?: string };
  /** The drain deadline of this service (default DEFAULT_DRAIN_TIMEOUT_MS). */
  drainMs?(config: C): number;
  /** Builds and starts everything; throws (after cleaning up what it started) when it cannot. */
  start(ctx: StartContext<C>): Promise<Running>;
}

/** The process boundary a service runs against (tests replace it). */
export interface ServiceProcess {
  on(signal: 'SIGTERM' | 'SIGINT', listener: () => void): unknown;
  exit(code: number): void;
}

/**
 * Runs a service until SIGTERM/SIGINT, `shutdown()` or its end: logs `service started` and
 * `service stopped` (with the exit code), exits CONFIG on a configuration error, FAILED when it
 * cannot start, when it fails while running or when stopping takes longer than the drain
 * deadline plus CLOSE_GRACE_MS. Resolves with the exit code after `proc.exit` was called.
 */
export async function runService<C>(spec: ServiceSpec<C>, proc: ServiceProcess = process): Promise<number> {
  const t0 = Date.now();
  let config: C;
  try {
    config = spec.loadConfig();
  } catch (err) {
    const log = createLogger({ level: 'info', svc: spec.svc, destination: spec.destination ?? 'stdout' });
    log.fatal({ ...codeOf(err), exitCode: EXIT.CONFIG }, `configuration error: ${(err as Error).message}`);
    proc.exit(EXIT.CONFIG);
    return EXIT.CONFIG;
  }
  const log = createLogger({ ...spec.logger(config), svc: spec.svc, destination: spec.destination ?? 'stdout' });
  const drainMs = spec.drainMs?.(config) ?? DEFAULT_DRAIN_TIMEOUT_MS;
  const stopping = new AbortController();
  let running: Running | undefined;
  let finish!: (code: number) => void;
  const finished = new Promise<number>((resolve) => (finish = resolve));
  let exitCode: number = EXIT.OK;

  const stopNow = (r: Running) => {
    r.stop().then(
      () => finish(exitCode),
      (err: unknown) => {
        log.error({ err }, 'stopping failed');
        finish(exitCode === EXIT.OK ? EXIT.FAILED : exitCode);
      },
    );
  };
  const shutdown = (reason: string, code: number = EXIT.OK) => {
    if (stopping.signal.aborted) return;
    exitCode = code;
    stopping.abort();
    log.info({ reason, drainMs }, 'service stopping');
    setTimeout(() => {
      log.error({ deadlineMs: drainMs + CLOSE_GRACE_MS }, 'service did not stop by its drain deadline; exiting');
      finish(EXIT.FAILED);
    }, drainMs + CLOSE_GRACE_MS);
    if (running) stopNow(running); // else: stopped as soon as start() settles
  };
  proc.on('SIGTERM', () => shutdown('SIGTERM'));
  proc.on('SIGINT', () => shutdown('SIGINT'));

  try {
    running = await spec.start({ config, log, stopping: stopping.signal, shutdown: (reason) => shutdown(reason) });
  } catch (err) {
    if (stopping.signal.aborted) {
      // a signal came first: start gave up because of it
      log.info({ err: (err as Error).message }, 'stopped while starting');
      finish(exitCode);
    } else {
      const code = exitCodeOf(err);
      log.fatal({ err, ...codeOf(err), exitCode: code }, 'service failed to start');
      stopping.abort();
      finish(code);
    }
  }
  if (running) {
    const r = running;
    if (stopping.signal.aborted) stopNow(r);
    else log.info({ ms: Date.now() - t0 }, 'service started');
    r.done?.then(
      () => shutdown('finished'),
      (err: unknown) => {
        if (stopping.signal.aborted) return log.warn({ err }, 'failed while stopping');
        const code = exitCodeOf(err);
        log.fatal({ err, ...codeOf(err), exitCode: code }, (err as Error).message);
        shutdown('fatal error', code);
      },
    );
  }
  const code = await finished;
  log.info({ exitCode: code, ms: Date.now() - t0 }, 'service stopped');
  log.flush?.();
  proc.exit(code);
  return code;
}
