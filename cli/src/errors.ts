/**
 * The CLI's one error class. Every code is stable, has an exit status and a row in
 * docs/errors.md; the message says what is wrong, `hint` what to do about it.
 *
 * Exit statuses: 0 done; 1 the mesh said no or did not answer (a node unreachable, a refused
 * request, an unhealthy service); 2 the command itself is wrong (arguments, environment, the mesh
 * description, an input file) and nothing was sent.
 */
import { CodedError } from '@syncmesh-edge/log/errors';

export const CLI_ERRORS = {
  EDGE_CLI_USAGE: 2,
  EDGE_CLI_CONFIG: 2,
  EDGE_CLI_MESH_FILE: 2,
  EDGE_CLI_UNKNOWN_NODE: 2,
  EDGE_CLI_CREDENTIALS: 2,
  EDGE_CLI_INPUT: 2,
  EDGE_CLI_UNREACHABLE: 1,
  EDGE_CLI_REFUSED: 1,
  EDGE_CLI_BAD_ANSWER: 1,
  EDGE_CLI_UNHEALTHY: 1,
  EDGE_CLI_NOT_AVAILABLE: 1,
} as const;

export type CliErrorCode = keyof typeof CLI_ERRORS;

export class CliError extends CodedError<CliErrorCode> {
  override readonly name = 'CliError';
  /** What to do about it (printed after the message). */
  readonly hint: string | undefined;
  /** The node's own error code, when a node refused (EDGE_SYNCMESH_*). */
  readonly remoteCode: string | undefined;

  constructor(code: CliErrorCode, message: string, opts: { hint?: string; remoteCode?: string; cause?: unknown } = {}) {
    super(code, message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.hint = opts.hint;
    this.remoteCode = opts.remoteCode;
  }

  get exitCode(): number {
    return CLI_ERRORS[this.code];
  }

  toJSON(): Record<string, unknown> {
    return { code: this.code, message: this.message, ...(this.hint ? { hint: this.hint } : {}), ...(this.remoteCode ? { remote_code: this.remoteCode } : {}) };
  }
}
