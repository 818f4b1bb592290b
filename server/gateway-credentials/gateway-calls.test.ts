import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabaseUrl } from '../../test/db';
import { createPgPool } from '../db/pg';
import { recordGatewayCall, sweepGatewayCalls } from './gateway-calls';

// The table of gateway credentials calls stays bounded: a leaf not seen for a day is swept, in batches.

let pool: pg.Pool;
const prefix = `sweep-gw-${randomBytes(4).toString('hex')}`;

beforeAll(() => {
  pool = createPgPool(testDatabaseUrl(), 3);
});
afterAll(async () => {
  await pool.end();
});

/** Records `n` leaves of `kind`, then moves their last call `age` back. */
async function leaves(kind: string, n: number, age: string) {
  for (let i = 0; i < n; i++)
    await recordGatewayCall(pool, { leafSha256: `${prefix}:${kind}:${i}`, servingCaPin: 'pin', names: ['gw'], successorSha256: null });
  await pool.query(`UPDATE gateway_credential_calls SET last_seen = last_seen - $2::interval WHERE leaf_sha256 LIKE $1`, [
    `${prefix}:${kind}:%`,
    age,
  ]);
}
const left = async () =>
  (
    await pool.query<{ leaf_sha256: string }>(`SELECT leaf_sha256 FROM gateway_credential_calls WHERE leaf_sha256 LIKE $1`, [`${prefix}:%`])
  ).rows
    .map((r) => r.leaf_sha256.split(':')[1])
    .sort();

describe('the gateway credentials calls sweep', () => {
  it('deletes leaves not seen for a day, in batches, and keeps the rest', async () => {
    await leaves('old', 12, '25 hours');
    await leaves('recent', 2, '23 hours');
    await leaves('live', 1, '0 seconds');
    expect(await sweepGatewayCalls(pool, { batch: 5 })).toBeGreaterThanOrEqual(12);
    expect(await left()).toEqual(['live', 'recent', 'recent']);
  });
});
