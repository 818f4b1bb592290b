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
import { deleteExpectedMachines, listUnmatchedArrivals } from './manage';

// A large file imported in parts keeps one import id and its row numbers; entries that have not arrived can
// be deleted; arrivals that no entry admitted are listed.

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = testDb;

describe('expected machines: parts, deletion and unmatched arrivals', () => {
  it('continues an import across parts, deletes waiting entries, and lists the arrivals no entry matched', async () => {
    const t = await createTestTenant(db());
    const ref = { tenantId: t.tenantId, siteId: t.siteId };
    const macs = [randomMac(), randomMac(), randomMac()];
    const first = await importExpectedMachines(db(), t.admin, {
      ...ref,
      format: 'csv',
      content: `mac,hostname\n${macs[0]},a\n${macs[1]},b`,
      defaultPoolId: t.poolId,
    });
    const second = await importExpectedMachines(db(), t.admin, {
      ...ref,
      format: 'csv',
      content: `mac,hostname\n${macs[2]},c\nnot-a-mac,d`,
      defaultPoolId: t.poolId,
      importId: first.importId!,
      rowOffset: 2,
    });
    expect(second).toMatchObject({
      importId: first.importId,
      accepted: 1,
      rejected: [{ row: 4, reason: 'mac: not a permanent, globally administered MAC' }],
    });
    const waiting = await listExpectedMachines(db(), t.viewer, ref);
    expect(waiting.total).toBe(3);
    expect(new Set(waiting.items.map((i) => i.importId))).toEqual(new Set([first.importId]));
    expect(
      await failure(
        importExpectedMachines(db(), t.admin, {
          ...ref,
          format: 'csv',
          content: `mac\n${randomMac()}`,
          defaultPoolId: t.poolId,
          importId: 'imp_01nosuchimport0000000000',
        }),
      ),
    ).toMatchObject({ code: 'NOT_FOUND', field: 'importId' });

    const b = waiting.items.find((i) => i.mac === macs[1])!;
    expect(await deleteExpectedMachines(db(), t.admin, { ...ref, ids: [b.id] })).toEqual({ deleted: 1 });
    expect(await failure(deleteExpectedMachines(db(), t.admin, { ...ref, ids: [b.id] }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await failure(deleteExpectedMachines(db(), t.operator, { ...ref, importId: first.importId! }))).toMatchObject({
      code: 'ACCESS_DENIED',
    });

    // The first listed machine arrives and joins; the deleted one and a stranger wait, listed as unmatched.
    const join = async (mac: string) => {
      const token = (await createDiscoveryToken(db(), t.admin, { tenantId: t.tenantId, siteId: t.siteId, mac, ttlSeconds: 3600 })).token!;
      return agentJoin(h, token, machineClaims({ macs: [mac], hostname: `host-${mac.slice(-2)}` }), {
        role: 'discovery',
        attestor: 'discovery',
        expectedRole: 'ramdisk',
        keys: generateNodeKeyAndCsr(),
      });
    };
    expect((await join(macs[0]!)).answer).toMatchObject({ status: 'joined' });
    expect((await join(macs[1]!)).answer).toMatchObject({ status: 'pending' });
    const stranger = randomMac();
    expect((await join(stranger)).answer).toMatchObject({ status: 'pending' });
    const unmatched = await listUnmatchedArrivals(db(), t.viewer, { ...ref, limit: 100 });
    expect(unmatched.items.map((i) => i.mac).sort()).toEqual([macs[1], stranger].sort());
    expect(unmatched.items[0]).toMatchObject({ state: 'pending', decidedBy: null, hostname: expect.stringMatching(/^host-/) });

    expect(await deleteExpectedMachines(db(), t.admin, { ...ref, importId: first.importId! })).toEqual({ deleted: 1 });
    expect((await listExpectedMachines(db(), t.viewer, ref)).total).toBe(0);
    expect((await listExpectedMachines(db(), t.viewer, { ...ref, state: 'arrived' })).items.map((i) => i.mac)).toEqual([macs[0]]);
  });
});
