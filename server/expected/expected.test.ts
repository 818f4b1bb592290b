import { beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, type JoinHarness } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import { createDiscoveryToken } from '../tokens/site-scoped';
import type { z } from 'zod';
import type { Db } from '../db/client';
import type { Principal } from '../authz/principal';
import {
  importExpectedInput,
  importExpectedMachines as importParsed,
  listExpectedInput,
  listExpectedMachines as listParsed,
} from './expected';

// The domain functions take parsed input (the procedures parse it): parse here as the adapters do.
const importExpectedMachines = (d: Db, p: Principal, input: z.input<typeof importExpectedInput>) =>
  importParsed(d, p, importExpectedInput.parse(input));
const listExpectedMachines = (d: Db, p: Principal, input: z.input<typeof listExpectedInput>) =>
  listParsed(d, p, listExpectedInput.parse(input));

// An imported list of expected machines: a discovery join whose vouched MAC (or trusted serial) matches an
// entry is admitted into the entry's pool without waiting, recorded as decided by the import.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;

describe('expected machines', () => {
  it('previews rejected rows with why, imports 10,000 rows in seconds, and admits a listed machine into its pool at once', async () => {
    const t = await createTestTenant(db());
    const other = await t.newPool();
    const ref = { tenantId: t.tenantId, siteId: t.siteId };
    const mac = randomMac();
    const csv = [
      'serial,mac,pool,hostname',
      `SN-EXP-1,${mac.toUpperCase()},${other},gpu-e-01`,
      'To Be Filled By O.E.M.,,,',
      ',ff:ff:ff:ff:ff:ff,,',
      'SN-2,,pool_nosuch,',
      ',,,host-only',
    ].join('\n');
    const preview = await importExpectedMachines(db(), t.admin, {
      ...ref,
      format: 'csv',
      content: csv,
      defaultPoolId: t.poolId,
      preview: true,
    });
    expect(preview).toMatchObject({ importId: null, accepted: 1 });
    expect(preview.rejected).toEqual([
      { row: 2, reason: 'serial: a firmware placeholder never matches' },
      { row: 3, reason: 'mac: not a permanent, globally administered MAC' },
      {
        row: 4,
        reason: `pool: "pool_nosuch" is not a pool of site ${t.site.name} (${t.siteId}); expected the name or id of a pool of this site that runs bcd`,
      },
      { row: 5, reason: 'names no identifier (serial, productUuid, mac or gpuUuid)' },
    ]);
    expect(preview.sample[0]).toMatchObject({ serial: 'sn-exp-1', mac, poolId: other, hostname: 'gpu-e-01' });
    expect((await listExpectedMachines(db(), t.viewer, { ...ref, state: 'waiting', limit: 100 })).total).toBe(0);

    const saved = await importExpectedMachines(db(), t.admin, {
      ...ref,
      format: 'csv',
      content: csv,
      defaultPoolId: t.poolId,
      preview: false,
    });
    expect(saved).toMatchObject({ importId: expect.stringMatching(/^imp_/), accepted: 1 });
    const big = JSON.stringify(Array.from({ length: 10_000 }, (_, i) => ({ serial: `BULK-${i}`, hostname: `bulk-${i}` })));
    const bulk = await importExpectedMachines(db(), t.admin, {
      ...ref,
      format: 'json',
      content: big,
      defaultPoolId: t.poolId,
      preview: false,
    });
    expect(bulk).toMatchObject({ accepted: 10_000, rejected: [] });
    // Import speed is measured by `npm run bench:join-requests` (tests never assert wall-clock time).
    expect((await listExpectedMachines(db(), t.viewer, { ...ref, state: 'waiting', limit: 5 })).total).toBe(10_001);

    // The listed machine boots: its first discovery join is admitted into the entry's pool.
    const token = (await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 })).token!;
    const joined = await agentJoin(h, token, machineClaims({ macs: [mac], productSerial: 'SN-EXP-1' }), {
      role: 'discovery',
      attestor: 'discovery',
      expectedRole: 'ramdisk',
      keys: generateNodeKeyAndCsr(),
    });
    expect(joined.status).toBe(200);
    expect(joined.answer).toMatchObject({ status: 'joined' });
    const node = await db().node.findUniqueOrThrow({ where: { id: (joined.answer as unknown as { nodeId: string }).nodeId } });
    expect(node.poolId).toBe(other);
    const request = await db().joinRequest.findFirstOrThrow({ where: { siteId: t.siteId, nodeId: node.id } });
    expect(request).toMatchObject({ state: 'consumed', decidedBy: `import:${saved.importId}`, poolId: other });
    const arrived = await listExpectedMachines(db(), t.viewer, { ...ref, state: 'arrived', limit: 100 });
    expect(arrived.items).toEqual([expect.objectContaining({ mac, requestId: request.id, arrivedAt: expect.any(String) })]);

    // A machine nobody listed still waits.
    const stranger = randomMac();
    const strangerToken = (
      await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac: stranger, ttlSeconds: 3600 })
    ).token!;
    const waits = await agentJoin(h, strangerToken, machineClaims({ macs: [stranger] }), {
      role: 'discovery',
      attestor: 'discovery',
      expectedRole: 'ramdisk',
      keys: generateNodeKeyAndCsr(),
    });
    expect(waits.answer).toMatchObject({ status: 'pending' });

    expect(
      await failure(importExpectedMachines(db(), t.admin, { ...ref, format: 'json', content: '{"serial":"x"}', preview: false })),
    ).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'content' });
    expect(await failure(importExpectedMachines(db(), t.operator, { ...ref, format: 'csv', content: csv, preview: false }))).toMatchObject({
      code: 'ACCESS_DENIED',
    });
  });
});
