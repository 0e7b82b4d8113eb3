/**
 * The CLI's one error class. Every code is stable, has an exit status and a row in
 * docs/errors.md; the message says what is wrong, `hint` what to do about it.
 *
 * Exit statuses, from the project's one table (lib/log's EXIT): 0 done; 64 (USAGE) the command
 * line is wrong (a verb, an option, a node name, an input file) and nothing was sent; 78
 * (CONFIG) the configuration is wrong (the environment, the mesh description, an unreadable
 * secret) and nothing was sent; 1 (FAILED) the mesh said no or did not answer (a node
 * unreachable, a refused request, an unhealthy service).
 */
import { CodedError } from '@syncmesh-edge/log/errors';
import { EXIT } from '@syncmesh-edge/log/exit';

export const CLI_ERRORS = {
  EDGE_CLI_USAGE: EXIT.USAGE,
  EDGE_CLI_UNKNOWN_NODE: EXIT.USAGE,
  EDGE_CLI_INPUT: EXIT.USAGE,
  EDGE_CLI_CONFIG: EXIT.CONFIG,
  EDGE_CLI_MESH_FILE: EXIT.CONFIG,
  EDGE_CLI_CREDENTIALS: EXIT.CONFIG,
  EDGE_CLI_UNREACHABLE: EXIT.FAILED,
  EDGE_CLI_REFUSED: EXIT.FAILED,
  EDGE_CLI_BAD_ANSWER: EXIT.FAILED,
  EDGE_CLI_UNHEALTHY: EXIT.FAILED,
  EDGE_CLI_NOT_AVAILABLE: EXIT.FAILED,
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
