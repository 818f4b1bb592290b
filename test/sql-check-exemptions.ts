import { LOCK_NODES } from '../server/renew/renew-sql';
import { EXPIRING_SQL, WAIT_SQL } from '../server/metrics/shared-state-sql';

/**
 * The SQL of server/ that test/sql-extract.ts cannot read as a constant (or that PREPARE does not take), and how
 * each is checked instead. `source` is a piece of the call's text at that site (or of the statement). An entry that no longer matches anything fails the test
 * (remove it); a new unreadable statement fails it until it is made constant, converted to the typed layer, or
 * listed here with its reason.
 */
interface Exemption {
  file: string;
  source: string;
}

/** Texts built at module load or from a bounded list: the test PREPAREs the values the module exports. */
export const RUNTIME_CHECKED: Array<Exemption & { texts: string[] }> = [
  // The metrics scrape's statements splice the histogram buckets and expiry windows in (server/metrics/buckets.ts).
  { file: 'server/metrics/shared-state.ts', source: 'WAIT_SQL', texts: [WAIT_SQL] },
  { file: 'server/metrics/shared-state.ts', source: 'EXPIRING_SQL', texts: [EXPIRING_SQL] },
  // BEGIN and the nodes' locks in one simple query: the ids are escaped literals (no parameters in a simple query).
  { file: 'server/renew/renew-write.ts', source: 'LOCK_NODES.replace', texts: [LOCK_NODES.replace('$ids', "'node_a', 'node_b'")] },
  {
    file: 'server/sessions/session-service.ts',
    source: 'SELECT 1 FROM nodes WHERE id IN',
    texts: [`SELECT 1 FROM nodes WHERE id IN ('node_a', 'node_b') ORDER BY id FOR UPDATE`],
  },
];

/** Not checkable statically, each for its reason. */
export const UNCHECKABLE: Array<Exemption & { reason: string }> = [
  { file: 'server/db/typed.ts', source: 'compiled.sql', reason: 'the typed layer sends what Kysely compiles from schema-typed builders' },
  {
    file: 'server/db/migrate.ts',
    source: 'CREATE TABLE IF NOT EXISTS "_prisma_migrations"',
    reason: "the runner's own table, before any migration",
  },
  {
    file: 'server/db/migrate.ts',
    source: 'migration.sql',
    reason: 'the migrations themselves: the test database is built by running them',
  },
  { file: 'server/db/listen.ts', source: 'this.channel', reason: 'LISTEN of a channel name: names no table or column' },
  { file: 'server/db/embedded.ts', source: 'CREATE DATABASE', reason: 'creates the database the schema goes into' },
  // Conditions composed at run time from Prisma.sql fragments by a function; each area's integration tests run them.
  {
    file: 'server/expected/expected.ts',
    source: 'sql.raw(type)',
    reason: "one array parameter cast to a type named in the same function (expected machines' import)",
  },
  // Kysely fragments that are not expressions (a FROM item and its column aliases, an ANY operand): PREPARE cannot
  // take them alone; the builder types every column around them and each area's integration tests run the whole
  // statement.
  { file: 'server/expected/expected.ts', source: 'x(serial, uuid', reason: 'unnest alias list (expected machines import)' },
  { file: 'server/nodes/node-filter.ts', source: 'ANY(', reason: 'the search patterns as an ANY operand (nodes)' },
  { file: 'server/rules/rules.ts', source: 'WITH ORDINALITY', reason: 'unnest with ordinality as a FROM item (rules)' },
  { file: 'server/rules/rules.ts', source: 'x(id, position)', reason: 'unnest alias list (rules)' },
  { file: 'server/requests/approvable.ts', source: 'visible', reason: 'visibility fragment (requests)' },
  { file: 'server/requests/bulk.ts', source: 'where', reason: 'filter fragments (requests)' },
  { file: 'server/requests/bulk.ts', source: 'matchingCondition', reason: 'filter fragments (requests)' },
  { file: 'server/requests/decisions.ts', source: 'visible', reason: 'visibility fragment (requests)' },
  { file: 'server/requests/decisions.ts', source: 'samePersonActors', reason: 'actor fragment (requests)' },
  { file: 'server/requests/records.ts', source: 'visible', reason: 'visibility fragment (requests)' },
];
