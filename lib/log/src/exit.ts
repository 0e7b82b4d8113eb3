/**
 * The one table of exit codes of Syncmesh Edge's processes: the services (runService) and the
 * command-line tools (the operator CLI, the listener's cli.js). sysexits.h where one fits.
 * Loads no logger (pino), so a command-line tool imports it without the services' start-up cost.
 */
/**
 * - OK: stopped by a signal (or finished) and drained; a command did what it was asked.
 * - FAILED: did not start (a port in use, a start step that threw), a fatal error while running,
 *   or the drain did not finish by its deadline; a command whose target refused or did not answer.
 * - USAGE: a command-line tool was called with wrong arguments (EX_USAGE).
 * - CONFIG: the configuration is wrong (EX_CONFIG): the environment does not validate, or the
 *   setup behind it cannot work (not a replica set, authentication, a mesh description or secret
 *   that cannot be read); restarting the same way will not help.
 */
export const EXIT = { OK: 0, FAILED: 1, USAGE: 64, CONFIG: 78 } as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];
