import type { SmokeReport } from './run.js';

/** The table the command prints: one row per check, its outcome, its time, and a note or the reason. */
export function renderReport(report: SmokeReport): string {
  const rows = report.results.map((result) => [result.name, result.outcome, `${result.ms} ms`, result.detail]);
  const header = ['check', 'result', 'time', 'detail'];
  const widths = header.slice(0, 3).map((title, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, column) => (column === 2 ? cell.padStart(widths[column] ?? 0) : column < 3 ? cell.padEnd(widths[column] ?? 0) : cell))
      .join('  ')
      .trimEnd();
  const failed = report.results.filter((result) => result.outcome === 'FAIL').length;
  const verdict = report.passed
    ? 'PASSED'
    : failed > 0
      ? `FAILED: ${failed} check(s); docs/deploying.md says what each most likely means`
      : 'INTERRUPTED: not every check ran';
  return [line(header), ...rows.map(line), '', verdict].join('\n');
}
