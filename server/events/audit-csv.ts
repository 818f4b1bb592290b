/**
 * CSV for the audit export (RFC 4180: comma-separated, CRLF line ends, fields quoted when they hold a comma,
 * a quote or a line break, quotes doubled). A spreadsheet runs a cell that begins with `=`, `+`, `-` or `@`
 * as a formula (and a leading tab or carriage return can hide one), so such a value is written with a `'`
 * in front: the audit log holds text chosen by whoever wrote it (reasons, names, claims), never formulas.
 */

const FORMULA_START = /^[=+\-@\t\r]/;

/** One field: text as written, made inert for spreadsheets, quoted when it must be. */
export function csvField(value: unknown): string {
  let text = value === null || value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  if (FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One record, CRLF-terminated. */
export function csvRow(values: readonly unknown[]): string {
  return `${values.map(csvField).join(',')}\r\n`;
}
