import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { testDb } from '../../test/db';
import { createTestTenant, failure } from '../../test/fixtures';
import { archivePool } from '../pools/pools';
import type { Db } from '../db/client';
import type { Principal } from '../authz/principal';
import { importExpectedInput, importExpectedMachines as importParsed } from './expected';

// What an import refuses, and that every refusal says what was expected: keys that name an object's prototype
// machinery are unknown keys like any other (JSON and CSV), and a pool is named by its name or its id.

const importExpectedMachines = (d: Db, p: Principal, input: z.input<typeof importExpectedInput>) =>
  importParsed(d, p, importExpectedInput.parse(input));
const db = testDb;
const FIELDS = 'serial, productUuid, mac, gpuUuid, pool, hostname, expiresAt, labels';

describe('an expected-machine import', () => {
  it('refuses __proto__, constructor and prototype keys in JSON, whatever their value, and stores nothing of them', async () => {
    const t = await createTestTenant(db());
    const ref = { tenantId: t.tenantId, siteId: t.siteId, defaultPoolId: t.poolId };
    // Written by hand: JSON.stringify of an object literal would drop a `__proto__` key.
    const content = `[
      {"serial": "SN-OK-1"},
      {"serial": "SN-P-1", "__proto__": {"pool": "pool_elsewhere", "hostname": "x"}},
      {"serial": "SN-P-2", "__proto__": "x"},
      {"serial": "SN-P-3", "constructor": {"prototype": {"polluted": true}}},
      {"serial": "SN-P-4", "prototype": ""},
      {"serial": "SN-P-5", "Constructor": null},
      {"serial": "SN-P-6", "rack": {"u": 12}}
    ]`;
    const answer = await importExpectedMachines(db(), t.admin, { ...ref, format: 'json', content, preview: false });
    expect(answer.accepted).toBe(1);
    expect(answer.rejected).toEqual([
      { row: 2, reason: `unknown field "__proto__"; expected only ${FIELDS}` },
      { row: 3, reason: `unknown field "__proto__"; expected only ${FIELDS}` },
      { row: 4, reason: `unknown field "constructor"; expected only ${FIELDS}` },
      { row: 5, reason: `unknown field "prototype"; expected only ${FIELDS}` },
      { row: 6, reason: `unknown field "Constructor"; expected only ${FIELDS}` },
      { row: 7, reason: `unknown field "rack"; expected only ${FIELDS}` },
    ]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const stored = await db().expectedMachine.findMany({ where: { siteId: t.siteId } });
    expect(stored.map((m) => m.serial)).toEqual(['sn-ok-1']);
  });

  it('refuses the same keys as CSV headers, and a field whose JSON value is not text', async () => {
    const t = await createTestTenant(db());
    const ref = { tenantId: t.tenantId, siteId: t.siteId, defaultPoolId: t.poolId, preview: true };
    for (const key of ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty']) {
      const csv = `serial,${key}\nSN-C-1,x\nSN-C-2,`;
      const answer = await importExpectedMachines(db(), t.admin, { ...ref, format: 'csv', content: csv });
      const known = key === 'toString' || key === 'hasOwnProperty';
      // Other unknown columns may stay empty (a spreadsheet's spare column); the prototype keys never.
      expect(answer.rejected).toEqual(
        known
          ? [{ row: 1, reason: `unknown field "${key}"; expected only ${FIELDS}` }]
          : [
              { row: 1, reason: `unknown field "${key}"; expected only ${FIELDS}` },
              { row: 2, reason: `unknown field "${key}"; expected only ${FIELDS}` },
            ],
      );
    }
    const json = JSON.stringify([{ serial: ['SN-A'] }, { hostname: { a: 1 }, serial: 'SN-B' }, { serial: true }]);
    const answer = await importExpectedMachines(db(), t.admin, { ...ref, format: 'json', content: json });
    expect(answer.rejected).toEqual([
      { row: 1, reason: 'serial: expected text, not a list' },
      { row: 2, reason: 'hostname: expected text, not object' },
      { row: 3, reason: 'serial: expected text, not boolean' },
    ]);
  });

  it('takes a pool by name or id, and says what was expected for one it cannot use', async () => {
    const t = await createTestTenant(db());
    const ref = { tenantId: t.tenantId, siteId: t.siteId };
    const plain = await t.newPool('none');
    const archived = await t.newPool();
    await archivePool(db(), t.admin, { tenantId: t.tenantId, poolId: archived });
    const names = Object.fromEntries((await db().pool.findMany({ where: { siteId: t.siteId } })).map((p) => [p.id, p.name] as const));
    const other = await createTestTenant(db());
    const site = `${t.site.name} (${t.siteId})`;
    const expected = 'expected the name or id of a pool of this site that runs bcd';
    const csv = [
      'serial,pool',
      `SN-N-1,${names[t.poolId]}`,
      `SN-N-2,${t.poolId}`,
      'SN-N-3,rack-b',
      `SN-N-4,${names[plain]}`,
      `SN-N-5,${archived}`,
      `SN-N-6,${other.poolId}`,
      'SN-N-7,',
    ].join('\n');
    const answer = await importExpectedMachines(db(), t.admin, { ...ref, format: 'csv', content: csv, preview: true });
    expect(answer.accepted).toBe(2);
    expect(answer.sample.map((r) => r.poolId)).toEqual([t.poolId, t.poolId]);
    expect(answer.rejected).toEqual([
      { row: 3, reason: `pool: "rack-b" is not a pool of site ${site}; ${expected}` },
      { row: 4, reason: `pool: "${names[plain]}" runs none, not bcd; ${expected}` },
      { row: 5, reason: `pool: "${archived}" is archived; ${expected}` },
      { row: 6, reason: `pool: "${other.poolId}" is not a pool of site ${site}; ${expected}` },
      { row: 7, reason: 'pool: missing, and the import names no default pool; expected a pool name or id' },
    ]);

    // The default pool, too, by name or id; one it cannot use is refused with the same words.
    const byName = await importExpectedMachines(db(), t.admin, {
      ...ref,
      format: 'csv',
      content: 'serial\nSN-D-1',
      defaultPoolId: names[t.poolId]!,
      preview: true,
    });
    expect(byName.sample[0]!.poolId).toBe(t.poolId);
    expect(
      await failure(importExpectedMachines(db(), t.admin, { ...ref, format: 'csv', content: 'serial\nSN-D-2', defaultPoolId: 'rack-b' })),
    ).toMatchObject({
      code: 'NOT_FOUND',
      field: 'defaultPoolId',
      message: `Default pool: "rack-b" is not a pool of site ${site}; ${expected}`,
    });
  });
});
