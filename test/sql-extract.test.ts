import { describe, expect, it } from 'vitest';
import { extractFixture } from './sql-check-fixture';

describe('the SQL extractor', () => {
  it('reads pg, Prisma and Kysely statements with their constants, numbers parameters, lists what it cannot read', () => {
    const { found, unchecked } = extractFixture();
    const texts = found.map((f) => [f.kind, f.fragment, f.text.replace(/\s+/g, ' ').trim()]);
    expect(texts).toEqual([
      ['pg', false, 'SELECT id, nmae FROM tenants WHERE id = $1'],
      ['pg', false, "UPDATE tenants SET name = $2 WHERE id = $1 AND created_at < now() - interval '60 seconds'"],
      ['prisma', false, 'SELECT name FROM tenants WHERE id = $1 AND name <> $2'],
      ['prisma', false, 'DELETE FROM tenants WHERE id = $1'],
      ['kysely', true, 'count(*)::int'],
      ['kysely', true, 'lower($1)'],
    ]);
    expect(unchecked).toEqual([expect.objectContaining({ kind: 'pg', why: 'not a constant string: text', source: 'pool.query(text)' })]);
  }, 60_000);
});
