/**
 * The expand-only rule for migrations, checked statement by statement. During a rolling upgrade the previous
 * release keeps serving on the database that the new release's migrations have already changed, so a
 * migration may only add what the previous release ignores; it may not take away or reshape anything that
 * release reads or writes. What counts as breaking (each a {@link Rule}):
 *
 * - `drop-table`, `drop-column`, `drop-object` (a view, type, schema, sequence; a function or trigger that the
 *   same migration does not create again): the previous release still reads them.
 * - `rename` (a table, column, constraint or enum value): the previous release asks for the old name.
 * - `alter-type` (`ALTER COLUMN … TYPE`): the previous release's client decodes the old type.
 * - `set-not-null`, `add-required-column` (`ADD COLUMN … NOT NULL` without a default): the previous release's
 *   inserts leave the column out, and would be refused.
 * - `drop-default`: the same, for a column that the previous release counts on the default of.
 * - `drop-not-null`: the new release may then store NULL where the previous release's client requires a value.
 * - `tighten` (`ADD CONSTRAINT`/`CHECK`/`UNIQUE`/`PRIMARY KEY`/`FOREIGN KEY`, `CREATE UNIQUE INDEX` on a table
 *   that already existed): rows the previous release writes may be refused.
 * - `truncate`: rows the previous release relies on disappear.
 *
 * Statements on a table that the same migration creates are free: the previous release does not know it; so is a
 * constraint or unique index on columns that the same migration adds to an existing table (with a default that
 * satisfies it, or nullable), since the previous release never writes them. Data
 * fixes (`UPDATE`, `DELETE … WHERE`), new tables, nullable or defaulted columns, indexes that are not unique,
 * `DROP INDEX`, `DROP CONSTRAINT` and `CREATE OR REPLACE FUNCTION` are expansions.
 */

export type Rule =
  | 'drop-table'
  | 'drop-column'
  | 'drop-object'
  | 'rename'
  | 'alter-type'
  | 'set-not-null'
  | 'add-required-column'
  | 'drop-default'
  | 'drop-not-null'
  | 'tighten'
  | 'truncate';

interface Violation {
  rule: Rule;
  /** The statement, whitespace collapsed (bodies of functions shown as `$…$`). */
  statement: string;
}

/**
 * The top-level statements of a migration: comments removed, string and dollar-quoted bodies kept opaque
 * (a function body's `DROP` or `;` is not a statement of the migration), whitespace collapsed.
 */
function splitStatements(sql: string): string[] {
  const statements: string[] = [];
  let current = '';
  for (let i = 0; i < sql.length;) {
    const rest = sql.slice(i);
    if (rest.startsWith('--')) {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? sql.length : end + 1;
      current += ' ';
    } else if (rest.startsWith('/*')) {
      const end = sql.indexOf('*/', i + 2);
      i = end === -1 ? sql.length : end + 2;
      current += ' ';
    } else if (/^\$[A-Za-z_]*\$/.test(rest)) {
      const tag = /^\$[A-Za-z_]*\$/.exec(rest)![0];
      const end = sql.indexOf(tag, i + tag.length);
      i = end === -1 ? sql.length : end + tag.length;
      current += ' $…$ ';
    } else if (rest[0] === "'") {
      let j = i + 1;
      while (j < sql.length && !(sql[j] === "'" && sql[j + 1] !== "'")) j += sql[j] === "'" ? 2 : 1;
      current += sql.slice(i, j + 1);
      i = j + 1;
    } else if (rest[0] === ';') {
      statements.push(current);
      current = '';
      i++;
    } else {
      current += rest[0];
      i++;
    }
  }
  statements.push(current);
  return statements.map((s) => s.replace(/\s+/g, ' ').trim()).filter((s) => s.length > 0);
}

/** Splits at commas outside parentheses and quotes (the actions of one ALTER TABLE). */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"') quote = c;
    else if (c === '(') depth++;
    else if (c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts;
}

const NAME = String.raw`((?:"[^"]+"|[A-Za-z_][\w$]*)(?:\.(?:"[^"]+"|[A-Za-z_][\w$]*))?)`;
/** A table's or object's name without quotes or the `public.` schema, lower case when unquoted. */
const bare = (name: string) =>
  name
    .split('.')
    .map((part) => (part.startsWith('"') ? part.slice(1, -1) : part.toLowerCase()))
    .filter((part, i, all) => !(all.length > 1 && i === 0 && part === 'public'))
    .join('.');

const CREATE_TABLE = new RegExp(String.raw`^CREATE (?:UNLOGGED )?TABLE (?:IF NOT EXISTS )?${NAME}`, 'i');
const CREATE_ROUTINE = new RegExp(String.raw`^CREATE (?:OR REPLACE )?(?:FUNCTION|PROCEDURE|TRIGGER) ${NAME}`, 'i');
const ALTER_TABLE = new RegExp(String.raw`^ALTER TABLE (?:IF EXISTS )?(?:ONLY )?${NAME} (.*)$`, 'i');
const DROP = new RegExp(
  String.raw`^DROP (TABLE|VIEW|MATERIALIZED VIEW|TYPE|SCHEMA|SEQUENCE|FUNCTION|PROCEDURE|TRIGGER|DOMAIN) (?:IF EXISTS )?${NAME}`,
  'i',
);
const UNIQUE_INDEX = new RegExp(
  String.raw`^CREATE UNIQUE INDEX (?:CONCURRENTLY )?(?:IF NOT EXISTS )?(?:${NAME} )?ON (?:ONLY )?${NAME}`,
  'i',
);

const NOT_COLUMNS = new Set(
  'AND OR NOT IN IS NULL TRUE FALSE LIKE ILIKE BETWEEN ANY ALL ARRAY CHECK CONSTRAINT UNIQUE ON USING WHERE NULLS DISTINCT ASC DESC BTREE'.split(
    ' ',
  ),
);

/**
 * The columns a constraint or unique index names: its identifiers outside string literals, less keywords and
 * function names. Undefined when there is nothing to read (a constraint that cannot be judged).
 */
function columnsNamed(text: string): string[] | undefined {
  const body = text.replace(/'(?:[^']|'')*'/g, "''");
  const open = body.indexOf('(');
  if (open === -1) return undefined;
  const words = [...body.slice(open).matchAll(/"([^"]+)"|([A-Za-z_][\w$]*)(\s*\()?/g)];
  return words
    .filter((w) => w[1] !== undefined || (!w[3] && !NOT_COLUMNS.has(w[2]!.toUpperCase())))
    .map((w) => w[1] ?? w[2]!.toLowerCase());
}

/** Whether every column `text` names is one of `added` (columns new in this migration). */
function onlyNewColumns(text: string, added: Set<string> | undefined): boolean {
  const columns = columnsNamed(text);
  return !!added && !!columns && columns.length > 0 && columns.every((c) => added.has(c));
}

/** What an `ADD [COLUMN]` action adds that the previous release's inserts cannot satisfy. */
function isRequiredWithoutDefault(definition: string): boolean {
  return (
    /\bNOT NULL\b/i.test(definition) &&
    !/\b(DEFAULT|GENERATED)\b/i.test(definition) &&
    !/\b(SMALLSERIAL|SERIAL|BIGSERIAL)\b/i.test(definition)
  );
}

function alterTableViolations(action: string, added: Set<string> | undefined): Rule | undefined {
  if (/^RENAME\b/i.test(action)) return 'rename';
  if (/^DROP CONSTRAINT\b/i.test(action)) return undefined;
  if (/^DROP\b/i.test(action)) return 'drop-column';
  if (/^ADD (CONSTRAINT|CHECK|UNIQUE|PRIMARY KEY|FOREIGN KEY|EXCLUDE)\b/i.test(action))
    return onlyNewColumns(action.replace(/^ADD CONSTRAINT \S+ /i, ''), added) ? undefined : 'tighten';
  if (/^ADD\b/i.test(action)) return isRequiredWithoutDefault(action) ? 'add-required-column' : undefined;
  const alter = /^ALTER (?:COLUMN )?\S+ (.*)$/i.exec(action);
  if (!alter) return undefined;
  const change = alter[1]!;
  if (/^(SET DATA )?TYPE\b/i.test(change)) return 'alter-type';
  if (/^SET NOT NULL\b/i.test(change)) return 'set-not-null';
  if (/^DROP NOT NULL\b/i.test(change)) return 'drop-not-null';
  if (/^DROP DEFAULT\b/i.test(change)) return 'drop-default';
  return undefined;
}

/** Every statement of `sql` that breaks the expand-only rule, with the rule it breaks. */
export function expandOnlyViolations(sql: string): Violation[] {
  const statements = splitStatements(sql);
  const newTables = new Set<string>();
  const created = new Set<string>();
  /** Columns added to existing tables by this migration, by table. */
  const added = new Map<string, Set<string>>();
  for (const statement of statements) {
    const alter = ALTER_TABLE.exec(statement);
    if (alter) {
      for (const action of splitTopLevel(alter[2]!)) {
        const column = /^ADD (?:COLUMN )?(?:IF NOT EXISTS )?("[^"]+"|[A-Za-z_][\w$]*) /i.exec(action);
        if (!column || /^(CONSTRAINT|CHECK|UNIQUE|PRIMARY|FOREIGN|EXCLUDE)$/i.test(column[1]!)) continue;
        const table = bare(alter[1]!);
        if (!added.has(table)) added.set(table, new Set());
        added.get(table)!.add(bare(column[1]!));
      }
    }
    const table = CREATE_TABLE.exec(statement);
    if (table) newTables.add(bare(table[1]!));
    const routine = CREATE_ROUTINE.exec(statement);
    if (routine) created.add(bare(routine[1]!));
  }
  const violations: Violation[] = [];
  const flag = (rule: Rule, statement: string) => violations.push({ rule, statement });
  for (const statement of statements) {
    const drop = DROP.exec(statement);
    if (drop) {
      const kind = drop[1]!.toUpperCase();
      const name = bare(drop[2]!);
      if (kind === 'TABLE') {
        if (!newTables.has(name)) flag('drop-table', statement);
      } else if (!['FUNCTION', 'PROCEDURE', 'TRIGGER'].includes(kind) || !created.has(name)) {
        flag('drop-object', statement);
      }
      continue;
    }
    if (/^TRUNCATE\b/i.test(statement)) {
      flag('truncate', statement);
      continue;
    }
    if (/^ALTER (TYPE|INDEX|SEQUENCE|VIEW|FUNCTION|SCHEMA)\b.* RENAME\b/i.test(statement)) {
      flag('rename', statement);
      continue;
    }
    const unique = UNIQUE_INDEX.exec(statement);
    if (unique) {
      const table = bare(unique[2]!);
      const columns = statement.slice(unique[0].length);
      if (!newTables.has(table) && !onlyNewColumns(columns, added.get(table))) flag('tighten', statement);
      continue;
    }
    const alter = ALTER_TABLE.exec(statement);
    if (!alter || newTables.has(bare(alter[1]!))) continue;
    const table = bare(alter[1]!);
    const rules = new Set(splitTopLevel(alter[2]!).map((action) => alterTableViolations(action, added.get(table))));
    for (const rule of rules) if (rule) flag(rule, statement);
  }
  return violations;
}
