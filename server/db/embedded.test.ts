import { mkdtemp, rm, stat } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { listen } from '../boot/http-server';
import { startEmbeddedDatabase } from './embedded';

describe('embedded PostgreSQL', () => {
  it('keeps its data across a restart, on a new free port, with a 0600 password file', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'bc-embedded-'));
    try {
      const first = await startEmbeddedDatabase(dir);
      const client = new pg.Client({ connectionString: first.url });
      await client.connect();
      await client.query('CREATE TABLE kept (v text); INSERT INTO kept VALUES ($$still here$$)');
      await client.end();
      await first.stop();

      const second = await startEmbeddedDatabase(dir);
      const again = new pg.Client({ connectionString: second.url });
      await again.connect();
      const { rows } = await again.query('SELECT v FROM kept');
      await again.end();
      await second.stop();
      expect(rows).toEqual([{ v: 'still here' }]);
      expect((await stat(path.join(dir, 'postgres-password'))).mode & 0o777).toBe(0o600);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('reports a port in use as a clear error', async () => {
    const taken = http.createServer();
    await listen(taken, 0, '127.0.0.1');
    const port = (taken.address() as { port: number }).port;
    const second = http.createServer();
    await expect(listen(second, port, '127.0.0.1')).rejects.toThrow(`Port ${port} is already in use; set PORT to another port`);
    taken.close();
  });
});
