import type pg from 'pg';
import { addressBucket } from '../../protocol/address-bucket';
import { discoverySettings } from '../../protocol/api/discovery-settings';
import type { PreparedJoin } from './prepare';
import {
  COUNT_REQUEST_RATES,
  HIT_CHALLENGE_RATES,
  LOCK_REQUEST_RATES,
  LOCK_SITE_QUEUES,
  SELECT_SITE_QUEUES,
} from './request-admission-sql';

// The one admission rule of every deferring attestor (discovery, tpm, and any later one) for a NEW join request:
// the site's queue has room (`maxPendingRequests`) and the new-request rate limits, per site and per source
// address, have room (kept in `rate_limits`, so every API instance counts the same windows). A refresh of the
// machine's live request is not a new request and never asks. The attestor calls `admitNew` from `decide`
// through AttestorInput.requests; the core loads the state once per batch (sites the attestors name through
// Attestor.queueSite) and writes the counts once the attestors wrote their requests.

/** How many new join requests may be made per window; the refusal is `<attestor>:rate-limited`. */
export interface NewRequestLimits {
  /** New requests per source address (every site together) and window. */
  perAddress: number;
  /** New requests per site (every source together) and window. */
  perSite: number;
  windowSeconds: number;
  /**
   * Challenges issued without a token (any attestor's round one: a stored nonce and a signed answer), per
   * source address and window; the refusal is `<attestor>:rate-limited`.
   */
  challengesPerAddress: number;
  /** Prefix of the rate-limit keys; tests isolate themselves with their own. */
  keyPrefix: string;
}

export const DEFAULT_NEW_REQUEST_LIMITS: NewRequestLimits = {
  perAddress: 20,
  perSite: 300,
  windowSeconds: 60,
  challengesPerAddress: 60,
  keyPrefix: 'join-request-new',
};

/** What a deferring attestor asks before it records a new join request. */
export interface RequestAdmission {
  /**
   * Whether a new join request of `attestor` may wait in `siteId`'s queue: null (room, now counted) or the
   * refusal reason, `<attestor>:queue-full` (the site's `maxPendingRequests` wait) or `<attestor>:rate-limited`
   * (the site's or the source address's window is full). A join without a source address (an in-process
   * caller, never an HTTP one) counts against the site only.
   *
   * @throws Error when the attestor did not name `siteId` through Attestor.queueSite (a programming error).
   */
  admitNew(attestor: string, siteId: string, clientAddress: string | undefined): string | null;
}

interface SiteQueue {
  pending: number;
  cap: number;
}

const siteKey = (limits: NewRequestLimits, siteId: string) => `${limits.keyPrefix}:site:${siteId}`;
const addressKey = (limits: NewRequestLimits, address: string) => `${limits.keyPrefix}:address:${addressBucket(address)}`;

class SiteQueues implements RequestAdmission {
  /** New requests this batch counted, per rate-limit key. */
  readonly counted = new Map<string, number>();

  constructor(
    private readonly limits: NewRequestLimits,
    private readonly sites: Map<string, SiteQueue>,
    private readonly used: Map<string, number>,
  ) {}

  admitNew(attestor: string, siteId: string, clientAddress: string | undefined): string | null {
    const site = this.sites.get(siteId);
    if (!site) throw new Error(`site ${siteId} was not loaded for new join requests: its attestor must name it in queueSite`);
    if (site.pending >= site.cap) return `${attestor}:queue-full`;
    const keys: Array<[string, number]> = [[siteKey(this.limits, siteId), this.limits.perSite]];
    if (clientAddress) keys.push([addressKey(this.limits, clientAddress), this.limits.perAddress]);
    if (keys.some(([key, limit]) => (this.used.get(key) ?? 0) >= limit)) return `${attestor}:rate-limited`;
    site.pending += 1;
    for (const [key] of keys) {
      this.used.set(key, (this.used.get(key) ?? 0) + 1);
      this.counted.set(key, (this.counted.get(key) ?? 0) + 1);
    }
    return null;
  }
}

/** Nothing in the batch may wait in a queue. */
const NO_QUEUES: RequestAdmission = {
  admitNew: (_attestor, siteId) => {
    throw new Error(`site ${siteId} was not loaded for new join requests: its attestor must name it in queueSite`);
  },
};

/**
 * Locks the queues of the sites the batch's joins may wait in (LOCK_SITE_QUEUES, sorted), counts their
 * pending requests, and locks and reads the new-request windows of those sites and of the joins' source
 * addresses, inside the admission transaction and after its row locks. `queued` pairs each join that may
 * record a request with its site.
 */
export async function loadRequestAdmission(
  client: pg.PoolClient,
  queued: ReadonlyArray<{ join: PreparedJoin; siteId: string }>,
  limits: NewRequestLimits,
): Promise<RequestAdmission> {
  if (!queued.length) return NO_QUEUES;
  const sites = [...new Set(queued.map((q) => q.siteId))].sort();
  const addresses = [...new Set(queued.flatMap((q) => (q.join.clientAddress ? [q.join.clientAddress] : [])))];
  const keys = [...sites.map((s) => siteKey(limits, s)), ...addresses.map((a) => addressKey(limits, a))].sort();
  // Sent together (one wait): the lock statement runs first, so the count is read under it.
  const [, queues, windows] = await Promise.all([
    client.query(LOCK_SITE_QUEUES, [sites]),
    client.query<{ id: string; discovery: unknown; pending: number }>(SELECT_SITE_QUEUES, [sites]),
    client.query<{ key: string; count: number }>(LOCK_REQUEST_RATES, [keys, `${limits.windowSeconds} seconds`]),
  ]);
  const loaded = new Map(queues.rows.map((r) => [r.id, { pending: r.pending, cap: discoverySettings(r.discovery).maxPendingRequests }]));
  return new SiteQueues(limits, loaded, new Map(windows.rows.map((r) => [r.key, r.count])));
}

/** Counts the new requests the batch recorded into their windows; whether it wrote. */
export async function writeRequestAdmission(client: pg.PoolClient, admission: RequestAdmission): Promise<boolean> {
  const counted = admission instanceof SiteQueues ? [...admission.counted] : [];
  if (!counted.length) return false;
  await client.query(COUNT_REQUEST_RATES, [counted.map(([key]) => key), counted.map(([, n]) => n)]);
  return true;
}

/**
 * Counts the challenges a batch is about to issue without a token into their source addresses' windows
 * (`rate_limit_hit`, in the admission transaction, in sorted key order after the new-request locks) and
 * answers, per challenge in the order given, whether it may be issued. A challenge without a source address
 * (an in-process caller) is not counted.
 */
export async function admitChallenges(
  client: pg.PoolClient,
  clientAddresses: ReadonlyArray<string | undefined>,
  limits: NewRequestLimits,
): Promise<boolean[]> {
  const allowed = clientAddresses.map(() => true);
  const keyed = clientAddresses.flatMap((a, i) => (a ? [{ key: `${limits.keyPrefix}:challenge:address:${addressBucket(a)}`, i }] : []));
  if (!keyed.length) return allowed;
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.i - b.i));
  const result = await client.query<{ ord: string; allowed: boolean }>(HIT_CHALLENGE_RATES, [
    keyed.map((k) => k.key),
    limits.challengesPerAddress,
    `${limits.windowSeconds} seconds`,
  ]);
  for (const r of result.rows) allowed[keyed[Number(r.ord) - 1]!.i] = r.allowed;
  return allowed;
}
