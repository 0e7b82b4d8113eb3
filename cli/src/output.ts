/** Plain-text tables and numbers for people; --json output is the verbs' results as they are. */
import { EXIT, type ExitCode } from '@syncmesh-edge/log/exit';

/** A table with a header row; every cell is a string already. Columns are padded, not cut. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** 1234.5 -> "1,235"; with digits: fixed decimals. */
export function num(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

export function ms(n: number): string {
  return `${num(n, Math.abs(n) < 10 ? 1 : 0)} ms`;
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${num(n / 1024, 1)} KiB`;
  return `${num(n / 1024 / 1024, 1)} MiB`;
}

/** What a verb hands back to main: its result (--json), its text (otherwise), problems (stderr). */
export interface VerbOutcome {
  /** EXIT.OK done, EXIT.FAILED the mesh refused or failed somewhere (see problems). */
  code: ExitCode;
  result: unknown;
  text: string;
  /** One line each, printed on stderr (also with --json). */
  problems?: string[];
}

/** The exit status of a verb that ran: FAILED when it met problems (one line each on stderr), else OK. */
export function exitOf(problems: readonly string[]): ExitCode {
  return problems.length > 0 ? EXIT.FAILED : EXIT.OK;
}
