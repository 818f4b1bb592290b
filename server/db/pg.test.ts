import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { testDatabaseUrl } from '../../test/db';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// A process whose pooled connection breaks while it holds it between two statements (a transaction signing
// certificates, say) when the primary is killed or fails over: the server ends the session (FATAL 57P01) with
// no query in flight, and node-postgres emits 'error' on the checked-out client. The pool only listens to its
// idle clients, so that error killed the whole API process. It runs in a process of its own here, because
// what is checked is that the process survives.
const SCRIPT = `
import pg from 'pg';
import { createPgPool } from './server/db/pg.ts';
const pool = createPgPool(process.env.URL, 2);
const held = await pool.connect();
const { rows } = await held.query('SELECT pg_backend_pid() AS pid');
const admin = new pg.Client({ connectionString: process.env.URL });
await admin.connect();
await admin.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
await admin.end();
await new Promise((resolve) => setTimeout(resolve, 500));
const next = await held.query('SELECT 1').then(() => 'answered', (error) => 'failed: ' + error.message);
held.release();
const fresh = (await pool.query('SELECT 2 AS two')).rows[0].two;
await pool.end();
console.log(JSON.stringify({ next, fresh }));
`;

describe('createPgPool', () => {
  it('survives a checked-out connection that the server ends between statements; the pool reconnects', { timeout: 30_000 }, () => {
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], {
      cwd: ROOT,
      env: { ...process.env, URL: testDatabaseUrl(), NODE_NO_WARNINGS: '1' },
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    const outcome = JSON.parse(run.stdout) as { next: string; fresh: number };
    expect(outcome.next).toMatch(/^failed: /);
    expect(outcome.fresh).toBe(2);
  });
});
