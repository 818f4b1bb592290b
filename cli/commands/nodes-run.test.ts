import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess, startCliApi, type ApiServer } from '../../test/cli';
import { testDb } from '../../test/db';
import { captureStderr, type TestTenant } from '../../test/fixtures';
import { newId } from '../../server/ids';
import { projectResource, resource } from '../../server/authz/authorize';

// `better-compute nodes run`: a command to one node or to a pool's nodes, waited for with --wait. No agent runs
// here: the test answers the queued commands itself (as the result endpoint would store them).

const db = testDb();
const stderr = captureStderr();
let api: ApiServer;
let t: TestTenant;
let env: Record<string, string>;

/** A node with a live certificate (its row only), allowing `allowed` kinds (null: any). */
async function addNode(poolId: string, allowed: string[] | null = null) {
  const id = newId('node');
  await db.node.create({
    data: { id, tenantId: t.tenantId, siteId: t.siteId, poolId, role: 'node', state: 'adopted', trust: 'platform', attestor: 'join-token' },
  });
  await projectResource(db, resource.node(id), t.tenantId);
  await db.$executeRaw`
    INSERT INTO node_certs (serial, node_id, identity_generation, role, spki_sha256, der, not_before, not_after, allowed_kinds)
    VALUES (${randomBytes(8).toString('hex')}, ${id}, 1, 'node', ${randomBytes(32)}, ${randomBytes(64)}, now(), now() + interval '1 hour', ${allowed})`;
  return id;
}

/**
 * Answers every queued command of `nodeIds` with `state` a moment after it was queued (until stopped). A Prisma
 * query runs only once awaited or then'd: hence the `.then`.
 */
function answerer(nodeIds: string[], state: 'succeeded' | 'failed') {
  const timer = setInterval(() => {
    void db.$executeRaw`UPDATE node_commands SET state = ${state}, output = '{"ok":true}'::jsonb, finished_at = now()
      WHERE node_id = ANY(${nodeIds}::text[]) AND state = 'queued'`.then(
      () => {},
      () => {},
    );
  }, 300);
  return () => clearInterval(timer);
}

beforeAll(async () => {
  ({ api, t, env } = await startCliApi(db, { label: 'nodes-run', role: 'operator' }));
});
afterAll(async () => {
  stderr.stop();
  await api?.close();
});

describe('better-compute nodes run', { timeout: 60_000 }, () => {
  it('runs a command on one node and, with --wait, prints its end and result', async () => {
    const nodeId = await addNode(t.poolId);
    const stop = answerer([nodeId], 'succeeded');
    const run = await runCliInProcess(['nodes', 'run', nodeId, '--kind', 'bcd.doctor', '--timeout', '60', '--wait', '--json'], env);
    stop();
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      nodeId,
      kind: 'bcd.doctor',
      state: 'succeeded',
      timeoutSeconds: 60,
      output: { ok: true },
    });
  });

  it('runs a command on every node of a pool as one batch, with progress until done', async () => {
    const poolId = await t.newPool();
    const nodes = [await addNode(poolId), await addNode(poolId), await addNode(poolId, ['bcd.doctor'])];
    const stop = answerer(nodes, 'failed');
    const run = await runCliInProcess(['nodes', 'run', '--pool', poolId, '--kind', 'bcd.renew', '--wait', '--json'], env);
    stop();
    expect(run.code, run.stderr).toBe(0);
    // The ramdisk-like node's certificate does not allow bcd.renew: rejected in the batch, counted.
    expect(JSON.parse(run.stdout)).toMatchObject({ total: 3, done: true, counts: { failed: 2, rejected: 1, queued: 0, sent: 0 } });
  });

  it('refuses an unknown kind, and a kind the certificate does not allow', async () => {
    const nodeId = await addNode(t.poolId, ['bcd.doctor']);
    const unknown = await runCliInProcess(['nodes', 'run', nodeId, '--kind', 'rm.rf'], env);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('Unknown command kind');
    const refused = await runCliInProcess(['nodes', 'run', nodeId, '--kind', 'bcd.renew'], env);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('does not allow bcd.renew');
    const search = await runCliInProcess(['nodes', 'run', '--search', nodeId, '--kind', 'bcd.doctor'], env);
    expect(search.code).not.toBe(0);
    expect(search.stderr).toContain('--yes');
  });
});
