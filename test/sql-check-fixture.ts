import path from 'node:path';
import ts from 'typescript';
import { extractSql, programOf } from './sql-extract';

/** A module with SQL in every form the extractor reads, one statement naming a column the schema lacks. */
const FIXTURE = `
import pg from 'pg';
import { sql } from 'kysely';
declare const pool: pg.Pool;
declare const db: { $queryRaw<T>(q: TemplateStringsArray, ...v: unknown[]): Promise<T>; $executeRawUnsafe(q: string, ...v: unknown[]): Promise<number> };
const WRONG_COLUMN = \`SELECT id, nmae FROM tenants WHERE id = $1\`;
const WINDOW = 60;
export async function fixture(id: string, text: string) {
  await pool.query(WRONG_COLUMN, [id]);
  await pool.query({ name: 'rename', text: \`UPDATE tenants SET name = $2 WHERE id = $1 AND created_at < now() - interval '\${WINDOW} seconds'\`, values: [id, 'n'] });
  await db.$queryRaw\`SELECT name FROM tenants WHERE id = \${id} AND name <> \${text}\`;
  await db.$executeRawUnsafe('DELETE FROM tenants WHERE id = $1', id);
  await pool.query(text);
  return [sql<number>\`count(*)::int\`, sql\`lower(\${id})\`];
}
`;

/** The fixture's path: inside the tree, so 'pg' and 'kysely' resolve from node_modules. */
const FIXTURE_FILE = path.resolve('test/sql-check-fixture.virtual.ts');

/** What {@link extractSql} reads from the fixture (compiled in memory). */
export function extractFixture() {
  const host = ts.createCompilerHost({});
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (file, language, ...rest) =>
    path.resolve(file) === FIXTURE_FILE ? ts.createSourceFile(file, FIXTURE, language) : getSourceFile(file, language, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (file) => path.resolve(file) === FIXTURE_FILE || fileExists(file);
  const program = programOf([FIXTURE_FILE], { lib: ['lib.es2022.d.ts'], types: [] }, host);
  return extractSql(program, [FIXTURE_FILE], (file) => path.basename(file));
}
