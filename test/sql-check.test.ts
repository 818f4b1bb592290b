import { readdirSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseUrl } from './db';
import { checkSql, describeFailures } from './sql-check';
import { extractFixture } from './sql-check-fixture';
import { extractSql, programOf, type FoundSql, type UncheckedSql } from './sql-extract';
import { RUNTIME_CHECKED, UNCHECKABLE } from './sql-check-exemptions';

const root = path.resolve('.');
const serverFiles = () =>
  (readdirSync(path.join(root, 'server'), { recursive: true }) as string[])
    .map((f) => `server/${f.split(path.sep).join('/')}`)
    .filter((f) => /\.tsx?$/.test(f) && !/\.test\.tsx?$/.test(f) && !f.includes('/generated/'))
    .sort();

const matches = (u: UncheckedSql, e: { file: string; source: string }) =>
  u.file === e.file && (u.why.includes(e.source) || u.source.includes(e.source));

/**
 * Every hand-written SQL statement of server/ (outside tests), read statically (test/sql-extract.ts), PREPAREd
 * against the migrated schema: a renamed column, table or function fails here, with the file and line.
 * docs/decisions/typed-sql.md says why and how.
 */
describe('every SQL statement in server/ against the migrated schema', () => {
  let client: pg.Client;
  beforeAll(async () => {
    client = new pg.Client({ connectionString: testDatabaseUrl() });
    await client.connect();
  });
  afterAll(() => client.end());

  it('finds a wrong column in the fixture (the check can fail)', async () => {
    const failures = await checkSql(client, extractFixture().found);
    expect(failures.map((f) => [f.site, f.error])).toEqual([['sql-check-fixture.virtual.ts:9 (pg)', 'column "nmae" does not exist']]);
  }, 120_000);

  it('prepares every statement, and reads every one it finds', async () => {
    const files = serverFiles().map((f) => path.join(root, f));
    const { found, unchecked } = extractSql(programOf(files), files, (f) => path.relative(root, f).split(path.sep).join('/'));
    expect(found.length).toBeGreaterThan(50);

    // A statement the extractor cannot read fails the test, unless the exemptions say how it is checked.
    const byValue: FoundSql[] = [];
    const unread = unchecked.filter((u) => {
      const runtime = RUNTIME_CHECKED.find((e) => matches(u, e));
      if (runtime) byValue.push(...runtime.texts.map((text) => ({ ...u, text, fragment: false })));
      return !runtime && !UNCHECKABLE.some((e) => matches(u, e));
    });
    expect(unread.map((u) => `${u.file}:${u.line} (${u.kind}) ${u.why}: ${u.source}`)).toEqual([]);
    // An exemption that matches nothing any more is stale: remove it.
    const stale = [...RUNTIME_CHECKED, ...UNCHECKABLE].filter(
      (e) => !unchecked.some((u) => matches(u, e)) && !found.some((f) => f.file === e.file && f.text.includes(e.source)),
    );
    expect(stale).toEqual([]);

    const exempt = (f: FoundSql) => UNCHECKABLE.some((e) => e.file === f.file && f.text.includes(e.source));
    const failures = await checkSql(client, [...found.filter((f) => !exempt(f)), ...byValue]);
    expect(describeFailures(failures)).toBe('');
  }, 300_000);
});
