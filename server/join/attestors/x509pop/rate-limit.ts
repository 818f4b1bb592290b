import type pg from 'pg';
import { DomainError } from '../../../../protocol/errors';
import { addressBucket } from '../../../http/address-bucket';
import { HIT_X509POP_ADDRESSES } from './sql';

/** The window of the round-one limit. */
const WINDOW = '60 seconds';
const KEY_PREFIX = 'x509pop-round-one';

/**
 * Round ones (nonce issuance) per source address and minute, all instances together:
 * `BETTER_COMPUTE_X509POP_PER_ADDRESS` (1 to 100,000, default 60). A rack behind one NAT address that comes back
 * after days offline re-joins at most this many machines a minute; the rest are refused and retry.
 *
 * @throws DomainError INVALID_CONFIG for a value out of range (checked at start).
 */
export function x509popPerAddress(env: Record<string, string | undefined> = process.env): number {
  const raw = env.BETTER_COMPUTE_X509POP_PER_ADDRESS;
  if (raw === undefined || raw === '') return 60;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 100_000)
    throw new DomainError('INVALID_CONFIG', `BETTER_COMPUTE_X509POP_PER_ADDRESS must be a whole number from 1 to 100000, not ${raw}`);
  return n;
}

/**
 * Takes one hit per address in `addresses` (one per round-one join, repeats included) on the shared limit, in the
 * admission transaction: the hits commit or roll back with the batch. Answers the positions in `addresses` that
 * went past the limit. An IPv6 address counts by its /64.
 */
export async function hitRoundOneLimit(client: pg.ClientBase, addresses: string[], limit = x509popPerAddress()): Promise<Set<number>> {
  if (!addresses.length) return new Set();
  // Sorted by key, so two batches lock the rate_limits rows in one order.
  const order = addresses
    .map((address, i) => ({ key: `${KEY_PREFIX}:${addressBucket(address)}`, i }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.i - b.i));
  const { rows } = await client.query<{ ord: number; allowed: boolean }>(HIT_X509POP_ADDRESSES, [order.map((o) => o.key), limit, WINDOW]);
  return new Set(rows.filter((r) => !r.allowed).map((r) => order[r.ord - 1]!.i));
}
