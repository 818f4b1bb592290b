/**
 * `2025-03-04 09:41 UTC`: one unambiguous form for every operator, whatever the browser's locale. Tables
 * whose header already says UTC leave the zone out.
 */
export function formatTimestamp(iso: string, options: { zone?: boolean } = {}): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const text = date.toISOString().slice(0, 16).replace('T', ' ');
  return options.zone === false ? text : `${text} UTC`;
}
