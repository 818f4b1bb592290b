/**
 * Splits an import into parts of at most `rows` rows, each a complete CSV (the header repeated) or JSON
 * array, so a client can send a large file in several calls and show progress. `offset` is the number of
 * data rows before the part (the import's `rowOffset`). Free of the Prisma client: the console uses it too.
 */
export function splitImport(format: 'csv' | 'json', content: string, rows = 2_000): { content: string; offset: number; rows: number }[] {
  if (format === 'json') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(content);
    } catch {
      return [{ content, offset: 0, rows: 0 }]; // the server says why
    }
    if (!Array.isArray(parsed)) return [{ content, offset: 0, rows: 0 }];
    const parts = [];
    for (let i = 0; i < parsed.length; i += rows)
      parts.push({ content: JSON.stringify(parsed.slice(i, i + rows)), offset: i, rows: Math.min(rows, parsed.length - i) });
    return parts.length ? parts : [{ content, offset: 0, rows: 0 }];
  }
  // The server numbers the non-blank lines after the header; the parts keep that numbering.
  const lines = content.split(/\r?\n/).filter((l) => l.trim() !== '');
  const [header, ...data] = lines;
  if (header === undefined || !data.length) return [{ content, offset: 0, rows: 0 }];
  const parts = [];
  for (let i = 0; i < data.length; i += rows)
    parts.push({ content: [header, ...data.slice(i, i + rows)].join('\n'), offset: i, rows: Math.min(rows, data.length - i) });
  return parts;
}

/** The format a file name says (`.json`, else CSV). */
export const formatOfName = (name: string): 'csv' | 'json' => (/\.json$/i.test(name) ? 'json' : 'csv');
