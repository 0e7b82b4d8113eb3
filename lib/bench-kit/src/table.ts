/**
 * The benchmarks' one text table: a title, a header, a dashed rule and aligned columns, numbers
 * shown with a precision that suits their size (integers as they are; 3 decimals under 1, 2
 * under 100, none above).
 */

/** A number as a benchmark table shows it. */
export function formatNumber(n: number): string {
  if (!Number.isFinite(n) || Number.isInteger(n)) return String(n);
  const a = Math.abs(n);
  return a >= 100 ? n.toFixed(0) : a >= 1 ? n.toFixed(2) : n.toFixed(3);
}

/** The lines of a table (no trailing newline on the last): title, header, rule, rows. */
export function formatTable(title: string, head: readonly string[], rows: readonly (readonly (string | number)[])[]): string {
  const cells = [head, ...rows.map((r) => r.map((c) => (typeof c === 'number' ? formatNumber(c) : c)))];
  const width = head.map((_, i) => Math.max(...cells.map((r) => String(r[i] ?? '').length)));
  const line = (r: readonly (string | number)[]) => `  ${width.map((w, i) => String(r[i] ?? '').padEnd(w)).join('  ')}`.trimEnd();
  return [title, line(head), `  ${width.map((w) => '-'.repeat(w)).join('  ')}`, ...cells.slice(1).map(line)].join('\n');
}

/** Prints a table to stdout, after an empty line. */
export function printTable(title: string, head: readonly string[], rows: readonly (readonly (string | number)[])[]): void {
  process.stdout.write(`\n${formatTable(title, head, rows)}\n`);
}

/** Prints rows given as objects (the columns: the first row's keys), like console.table without the index. */
export function printRows(title: string, rows: readonly Readonly<Record<string, string | number>>[]): void {
  const head = Object.keys(rows[0] ?? {});
  printTable(
    title,
    head,
    rows.map((r) => head.map((k) => r[k] ?? '')),
  );
}
