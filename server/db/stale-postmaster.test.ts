import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { newServerSecret, startServerProcess } from '../../test/server-process';
import { runningEmbeddedDatabaseUrl } from './embedded';

// A server killed with SIGKILL leaves its embedded PostgreSQL running, re-parented, on the data directory; the
// next start must stop that orphan cleanly and come up on the same data, with nothing done by hand.

const dataDir = mkdtempSync(path.join(tmpdir(), 'bc-orphan-'));
const pidFile = path.join(dataDir, 'postgres', 'postmaster.pid');
const postmasterPid = () => Number(readFileSync(pidFile, 'utf8').split('\n', 1)[0]);
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
};
const secret = newServerSecret();
const start = () => startServerProcess({ secret, env: { BETTER_COMPUTE_DATA_DIR: dataDir, BETTER_COMPUTE_JOIN_THREADS: '0' } });

async function query<T>(sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: runningEmbeddedDatabaseUrl(dataDir)! });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

afterAll(() => {
  // Whatever happened, no PostgreSQL of this test outlives it.
  if (existsSync(pidFile) && alive(postmasterPid())) process.kill(postmasterPid(), 'SIGINT');
  for (let i = 0; i < 100 && existsSync(pidFile); i++) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
  rmSync(dataDir, { recursive: true, force: true });
});

describe('a start after the server was killed', () => {
  it('stops the PostgreSQL the dead server left running, then comes up on the same data', { timeout: 180_000 }, async () => {
    const first = await start();
    const orphan = postmasterPid();
    await query('CREATE TABLE kept_across_sigkill (v text); INSERT INTO kept_across_sigkill VALUES ($$committed before the kill$$)');
    const tenants = await query<{ n: string }>('SELECT count(*) AS n FROM tenants');
    await first.stop('SIGKILL');
    // The orphan: still running, on the old port, holding the lock file.
    expect(alive(orphan)).toBe(true);

    const second = await start();
    try {
      expect(alive(orphan)).toBe(false);
      expect(second.log.join('\n')).toContain(`Stopping the PostgreSQL (pid ${orphan}) that a previous start left running`);
      expect(postmasterPid()).not.toBe(orphan);
      expect(await query('SELECT v FROM kept_across_sigkill')).toEqual([{ v: 'committed before the kill' }]);
      expect(await query('SELECT count(*) AS n FROM tenants')).toEqual(tenants);
      // The server on it answers.
      const document = await fetch(`${second.url}/api/compute/.well-known/better-compute`);
      expect(document.status).toBe(200);
      // The orphan was stopped cleanly (a fast shutdown), so this start found a cleanly shut down cluster.
      expect(second.log.join('\n')).toMatch(/database system was shut down at/);
      expect(second.log.join('\n')).not.toMatch(/not properly shut down|automatic recovery/);
    } finally {
      await second.stop('SIGTERM');
    }
    // A stop that went through the server stops its PostgreSQL too.
    expect(existsSync(pidFile)).toBe(false);
  });

  it(
    'leaves the PostgreSQL of a server that is alive alone: a second start on its data directory is refused',
    { timeout: 180_000 },
    async () => {
      const first = await start();
      try {
        const running = postmasterPid();
        await expect(start()).rejects.toThrow(/did not start \(is another instance using this data directory\?\)/);
        expect(postmasterPid()).toBe(running);
        expect(await query('SELECT v FROM kept_across_sigkill')).toEqual([{ v: 'committed before the kill' }]);
        expect((await fetch(`${first.url}/api/compute/.well-known/better-compute`)).status).toBe(200);
      } finally {
        await first.stop('SIGTERM');
      }
    },
  );
});
