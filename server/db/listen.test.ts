import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { testDatabaseUrl } from '../../test/db';
import { ChannelListener } from './listen';

const CHANNEL = 'test_listen_reconnect';

async function notify(payload: string) {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    await client.query('SELECT pg_notify($1, $2)', [CHANNEL, payload]);
  } finally {
    await client.end();
  }
}

/** Ends every backend LISTENing on the channel, as a database restart or a failover would; returns how many. */
async function terminateListeners(): Promise<number> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  try {
    const { rows } = await client.query<{ ended: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
        WHERE datname = current_database() AND pid <> pg_backend_pid() AND query = $1`,
      [`LISTEN ${CHANNEL}`],
    );
    return rows.filter((r) => r.ended).length;
  } finally {
    await client.end();
  }
}

async function until(check: () => boolean | Promise<boolean>, what: string, attempts = 200) {
  for (let i = 0; i < attempts; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe('ChannelListener', () => {
  let listener: ChannelListener<string> | undefined;
  afterEach(async () => {
    await listener?.close();
    listener = undefined;
  });

  it('reopens its connection after the database ends it, and delivers again', async () => {
    listener = new ChannelListener(testDatabaseUrl(), CHANNEL, (payload) => (payload.startsWith('p') ? payload : null));
    const seen: string[] = [];
    await listener.subscribe((change) => seen.push(change));
    await notify('p1');
    await notify('ignored');
    await until(() => seen.includes('p1'), 'the first notification');

    expect(await terminateListeners()).toBe(1);
    await until(() => listener!.reconnects === 1, 'the reconnect');
    await notify('p2');
    await until(() => seen.includes('p2'), 'a notification after the reconnect');
    expect(seen).toEqual(['p1', 'p2']);
  });

  it('does not reopen once closed', async () => {
    listener = new ChannelListener(testDatabaseUrl(), CHANNEL, (payload) => payload);
    await listener.subscribe(() => {});
    await listener.close();
    expect(await terminateListeners()).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(listener.reconnects).toBe(0);
    expect(await terminateListeners()).toBe(0);
  });
});
