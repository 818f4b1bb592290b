import type pg from 'pg';
import type { FoundSql } from './sql-extract';

/** Statements that name no table or column: transaction control, settings, LISTEN. Accepted unprepared. */
const UTILITY = /^\s*(begin|commit|rollback|savepoint|release|set|listen|unlisten|show)\b/i;
/** What PREPARE takes (a statement; `WITH … INSERT` and the like start with `with`). */
const PREPARABLE = /^\s*(?:--[^\n]*\n\s*)*\(?\s*(select|insert|update|delete|with|values|merge|table)\b/i;

/**
 * A fragment alone has no context to type its parameters (`$1 - $2` where the builder put two columns): an
 * ambiguous operator or an undeterminable type there is no finding. A name that does not exist still is.
 */
const UNTYPED_PARAMETER = new Set(['42725', '42P18', '42804']);

interface SqlFailure {
  site: string;
  text: string;
  error: string;
}

/**
 * PREPAREs each statement (a fragment as `SELECT <fragment>`) on `client`, against its database's schema, and
 * deallocates it: PostgreSQL parses, resolves every table, column, function and operator, and infers the
 * parameters' types, so a renamed column or a dropped function fails here. Nothing runs. A statement PREPARE
 * does not take (DDL, an advisory lock) fails too, unless it is a {@link UTILITY} statement.
 */
export async function checkSql(client: pg.ClientBase, statements: readonly FoundSql[]): Promise<SqlFailure[]> {
  const failures: SqlFailure[] = [];
  let i = 0;
  for (const s of statements) {
    const site = `${s.file}:${s.line} (${s.kind})`;
    const text = s.fragment ? `SELECT ${s.text}` : s.text;
    if (!s.fragment && UTILITY.test(text)) continue;
    if (!PREPARABLE.test(text)) {
      failures.push({ site, text, error: 'not a statement PREPARE takes: cannot be checked' });
      continue;
    }
    const name = `sql_check_${++i}`;
    try {
      await client.query(`PREPARE ${name} AS ${text}`);
      await client.query(`DEALLOCATE ${name}`);
    } catch (error) {
      if (s.fragment && /\$\d/.test(s.text) && UNTYPED_PARAMETER.has((error as { code?: string }).code ?? '')) continue;
      failures.push({ site, text, error: (error as Error).message });
    }
  }
  return failures;
}

/** The failures as a list a reader can act on. */
export const describeFailures = (failures: readonly SqlFailure[]) =>
  failures.map((f) => `${f.site}: ${f.error}\n    ${f.text.replace(/\s+/g, ' ').trim().slice(0, 300)}`).join('\n');
