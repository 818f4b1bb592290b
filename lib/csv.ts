/**
 * CSV that is safe to open in a spreadsheet (RFC 4180 quoting and the OWASP "CSV injection" rule). Every CSV
 * the product writes (exports of expected machines, audit, ...) builds its cells with these two functions, so
 * a value an outsider chose (a hostname a machine reported, an imported serial) is never run as a formula.
 *
 * - A text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading `'`, which a
 *   spreadsheet shows as text and never evaluates (`=HYPERLINK(...)` becomes `'=HYPERLINK(...)`).
 * - A cell holding a comma, a double quote, a line break or a leading `'` added above is wrapped in double
 *   quotes, with its double quotes doubled.
 * - Numbers are written as numbers (a negative number stays a number); `null` and `undefined` are empty cells.
 *
 * A row is one line without its line break: join rows with {@link CSV_LINE_BREAK} (CRLF, as RFC 4180 says).
 * Free of the server and of React: the console, the CLI and the API all use it.
 */

/** Characters a spreadsheet treats as the start of a formula (or that hide one after them). */
const FORMULA_START = /^[=+\-@\t\r]/;
/** Characters that make a cell need quotes. */
const NEEDS_QUOTES = /[",\r\n]/;

export const CSV_LINE_BREAK = '\r\n';

/** One text cell, escaped for a spreadsheet and quoted when needed. */
export function csvField(value: string): string {
  const text = FORMULA_START.test(value) ? `'${value}` : value;
  return NEEDS_QUOTES.test(text) || text !== value ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One row of cells: text through {@link csvField}, finite numbers as they are, null/undefined empty. */
export function csvRow(values: readonly (string | number | null | undefined)[]): string {
  return values
    .map((value) => {
      if (value === null || value === undefined) return '';
      if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
      return csvField(value);
    })
    .join(',');
}
