/** Prints rows as an aligned table with a header, or a note when there are none. */
export function printTable<T>(rows: T[], columns: [header: string, value: (row: T) => unknown][], empty = 'None.') {
  if (rows.length === 0) {
    process.stdout.write(empty + '\n');
    return;
  }
  const cells = rows.map((row) => columns.map(([, value]) => formatCell(value(row))));
  const widths = columns.map(([header], i) => Math.max(header.length, ...cells.map((c) => c[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  process.stdout.write(line(columns.map(([h]) => h.toUpperCase())) + '\n');
  for (const row of cells) process.stdout.write(line(row) + '\n');
}

function formatCell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

export function printJson(value: unknown) {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/** A list as JSON with `--json`, else as {@link printTable}'s table. */
export function printRows<T>(
  rows: T[],
  json: boolean | undefined,
  columns: [header: string, value: (row: T) => unknown][],
  empty?: string,
) {
  if (json) printJson(rows);
  else printTable(rows, columns, empty);
}
