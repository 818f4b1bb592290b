import { describe, expect, it } from 'vitest';
import type { JoinRequestRecord } from '@/protocol/api/join-request-schemas';
import {
  approvablePools,
  claimEntries,
  clickSelection,
  decidedElsewhere,
  hardwareKeyWording,
  machineSummary,
  joinablePools,
  mergeRows,
  nextQueuePage,
  queueFilterOf,
  queueListInput,
  queuePoolOf,
  toQueueFilter,
} from './join-request-queue';
import { joinRequestRecord } from './join-request-fixture';

const order = ['a', 'b', 'c', 'd', 'e'];

function request(
  id: string,
  createdAt: string,
  state: JoinRequestRecord['state'] = 'pending',
  extra: Partial<JoinRequestRecord> = {},
): JoinRequestRecord {
  return joinRequestRecord({ id, state, siteId: 'site_1', createdAt, expiresAt: createdAt, ...extra });
}

describe('clickSelection', () => {
  it('toggles one row on a plain click', () => {
    expect([...clickSelection(order, new Set(['a']), 'a', 'c', false)]).toEqual(['a', 'c']);
    expect([...clickSelection(order, new Set(['a', 'c']), 'a', 'c', false)]).toEqual(['a']);
  });
  it('selects the range between the anchor and a shift-clicked row, in either direction', () => {
    expect([...clickSelection(order, new Set(['b']), 'b', 'd', true)].sort()).toEqual(['b', 'c', 'd']);
    expect([...clickSelection(order, new Set(['d']), 'd', 'a', true)].sort()).toEqual(['a', 'b', 'c', 'd']);
  });
  it('clears the range when the anchor row is unselected', () => {
    expect([...clickSelection(order, new Set(['a', 'b', 'c', 'e']), 'd', 'b', true)].sort()).toEqual(['a', 'e']);
  });
});

describe('mergeRows', () => {
  it('keeps a request decided meanwhile, with its decision, where it was in the list', () => {
    const items = [request('jreq_3', '2026-01-03T00:00:00Z'), request('jreq_1', '2026-01-01T00:00:00Z')];
    const decided = request('jreq_2', '2026-01-02T00:00:00Z', 'rejected');
    const rows = mergeRows(items, new Map([[decided.id, decided]]));
    expect(rows.map((r) => [r.id, r.state])).toEqual([
      ['jreq_3', 'pending'],
      ['jreq_2', 'rejected'],
      ['jreq_1', 'pending'],
    ]);
  });
  it('lets a known decision win over a stale pending row', () => {
    const approved = request('jreq_1', '2026-01-01T00:00:00Z', 'approved');
    expect(mergeRows([request('jreq_1', '2026-01-01T00:00:00Z')], new Map([[approved.id, approved]]))[0]!.state).toBe('approved');
  });
});

describe('decidedElsewhere', () => {
  it('names the decision, who made it, when, and why', () => {
    const text = decidedElsewhere(
      request('jreq_9', 'x', 'rejected', { decidedBy: 'op:alice', decidedAt: '2026-01-01T10:00:00.000Z', reason: 'unknown rack' }),
      'approve',
    );
    expect(text).toBe(
      'Request jreq_9 was already rejected by op:alice at 2026-01-01 10:00:00 UTC (“unknown rack”): it cannot be approved now. Nothing was changed.',
    );
  });
  it('names an operator by name, never by id', () => {
    const text = decidedElsewhere(
      request('jreq_8', 'x', 'approved', {
        decidedBy: 'operator:op_01k5w',
        decidedByName: 'Ada Lovelace',
        decidedAt: '2026-01-01T10:00:00.000Z',
      }),
      'reject',
    );
    expect(text).toContain('approved by Ada Lovelace at');
    expect(text).not.toContain('op_01k5w');
  });
});

describe('claimEntries and filters', () => {
  it('lists every MAC and GPU, in a fixed order, and skips empty claims', () => {
    const entries = claimEntries({ macs: ['m1', 'm2'], hostname: 'h', gpuUuids: ['g1'], productSerial: '' });
    expect(entries.map((e) => `${e.label}=${e.value}`)).toEqual(['Hostname=h', 'MAC=m1', 'MAC=m2', 'GPU=g1']);
  });
  it('falls back to pending for a missing or unknown state filter', () => {
    expect(toQueueFilter(null)).toBe('pending');
    expect(toQueueFilter('bogus')).toBe('pending');
    expect(toQueueFilter('all')).toBe('all');
  });
});

describe('approvablePools', () => {
  const pool = (
    id: string,
    extra: Partial<{ siteId: string; agent: string; archivedAt: string | null; policy: { joinAttestors?: string[] } }> = {},
  ) => ({
    id,
    siteId: 'site_1',
    agent: 'bcd',
    archivedAt: null,
    policy: {},
    ...extra,
  });
  const pools = [
    pool('pool_any'),
    pool('pool_tokens', { policy: { joinAttestors: ['join-token'] } }),
    pool('pool_pxe', { policy: { joinAttestors: ['join-token', 'discovery'] } }),
    pool('pool_archived', { archivedAt: '2026-01-01T00:00:00Z' }),
    pool('pool_none', { agent: 'none' }),
    pool('pool_elsewhere', { siteId: 'site_2' }),
  ];
  it("offers only the pools whose policy admits the requests' attestor, live, running bcd, in their site", () => {
    expect(approvablePools(pools, [request('jreq_1', '2026-01-01T00:00:00Z')]).map((p) => p.id)).toEqual(['pool_any', 'pool_pxe']);
  });
  it('needs every selected request to be admitted: a tpm request beside a discovery one leaves only the pool without a policy', () => {
    const selection = [
      request('jreq_1', '2026-01-01T00:00:00Z'),
      request('jreq_2', '2026-01-02T00:00:00Z', 'pending', { attestor: 'tpm' }),
    ];
    expect(approvablePools(pools, selection).map((p) => p.id)).toEqual(['pool_any']);
  });
  it("offers nothing for requests of two sites, and another site's pools for that site's requests", () => {
    const two = [request('jreq_1', '2026-01-01T00:00:00Z'), request('jreq_2', '2026-01-02T00:00:00Z', 'pending', { siteId: 'site_2' })];
    expect(approvablePools(pools, two)).toEqual([]);
    expect(approvablePools(pools, [two[1]!]).map((p) => p.id)).toEqual(['pool_elsewhere']);
  });
  it('offers only the pool of a recorded first approval (two-person sites) for the second one', () => {
    const first = { by: 'operator:op_a', byName: 'Ada', at: '2026-01-01T00:00:00Z', poolId: 'pool_pxe' };
    const waiting = request('jreq_1', '2026-01-01T00:00:00Z', 'pending', { requiredApprovals: 2, firstApproval: first });
    expect(approvablePools(pools, [waiting]).map((p) => p.id)).toEqual(['pool_pxe']);
    expect(approvablePools(pools, [waiting, request('jreq_2', '2026-01-02T00:00:00Z')]).map((p) => p.id)).toEqual(['pool_pxe']);
    const elsewhere = request('jreq_3', '2026-01-03T00:00:00Z', 'pending', { firstApproval: { ...first, poolId: 'pool_any' } });
    expect(approvablePools(pools, [waiting, elsewhere])).toEqual([]);
  });
});

describe('the queue filter in the URL', () => {
  const none = { q: null, attestor: null, vouchedBy: null, trusted: null, olderThan: null, newerThan: null };
  it('turns the URL parameters into the server filter', () => {
    expect(queueFilterOf(none)).toEqual({ filter: {}, ignored: [] });
    expect(
      queueFilterOf({
        ...none,
        q: '  rack-b7 ',
        attestor: 'discovery',
        vouchedBy: 'module:boot',
        trusted: 'no',
        olderThan: '1h',
        newerThan: '90m',
      }),
    ).toEqual({
      filter: {
        search: 'rack-b7',
        attestor: 'discovery',
        vouchedBy: 'module:boot',
        trustedKey: false,
        minAgeSeconds: 3600,
        maxAgeSeconds: 5400,
      },
      ignored: [],
    });
    expect(queueFilterOf({ ...none, trusted: 'yes' }).filter).toEqual({ trustedKey: true });
  });
  it('leaves out what it cannot read and names it', () => {
    expect(queueFilterOf({ ...none, q: '   ', trusted: 'maybe', olderThan: 'soon', attestor: 'TPM!' })).toEqual({
      filter: {},
      ignored: ['attestor', 'trusted', 'olderThan'],
    });
  });
});

describe('a dense row and the hardware key wording', () => {
  it('names the machine on one line: hostname, serial, product UUID, first MAC and how many more', () => {
    expect(
      machineSummary({ hostname: 'gpu-a17', productSerial: 'SN-1', productUuid: 'u-1', macs: ['3c:ec:ef:00:00:01', '3c:ec:ef:00:00:02'] }),
    ).toBe('gpu-a17 · SN-1 · u-1 · 3c:ec:ef:00:00:01 +1');
    expect(machineSummary({ boardSerial: 'B-2' })).toBe('B-2');
    expect(machineSummary({ hostname: 'h', sysVendor: 'Supermicro', productName: 'SYS-421GE-TNRT' })).toBe('h · Supermicro SYS-421GE-TNRT');
    expect(claimEntries({ sysVendor: 'Dell Inc.', productName: 'PowerEdge R760xa' }).map((e) => [e.label, e.value])).toEqual([
      ['Vendor', 'Dell Inc.'],
      ['Model', 'PowerEdge R760xa'],
    ]);
    expect(machineSummary({})).toBe('');
  });
  it('says trusted key, untrusted key or no key, the same for requests and nodes', () => {
    expect(hardwareKeyWording(true, true).label).toBe('trusted key');
    expect(hardwareKeyWording(true, false).label).toBe('untrusted key');
    expect(hardwareKeyWording(false, false).label).toBe('no key');
    // A ramdisk node holds the key untrusted on purpose; it does not read as a weak machine.
    expect(hardwareKeyWording(true, false, true).label).toBe('key left to the OS');
    expect(hardwareKeyWording(true, true, true).label).toBe('trusted key');
  });
});

describe("the queue's pool and list input, shared by the page and the server's prefetch", () => {
  const pools = [
    { id: 'pool_none', agent: 'none', archivedAt: null },
    { id: 'pool_old', agent: 'bcd', archivedAt: '2026-11-01T00:00:00Z' },
    { id: 'pool_a', agent: 'bcd', archivedAt: null },
    { id: 'pool_b', agent: 'bcd', archivedAt: null },
  ];
  it('offers only live bcd pools; ?pool= chooses among them, else the first', () => {
    const joinable = joinablePools(pools);
    expect(joinable.map((p) => p.id)).toEqual(['pool_a', 'pool_b']);
    expect(queuePoolOf(joinable, null)?.id).toBe('pool_a');
    expect(queuePoolOf(joinable, 'pool_b')?.id).toBe('pool_b');
    // An archived pool or one without the daemon is "not found", never silently replaced by another.
    expect(queuePoolOf(joinable, 'pool_old')).toBeUndefined();
    expect(queuePoolOf(joinable, 'pool_gone')).toBeUndefined();
  });
  it('builds the first page of 100 from the state and the filters, and reads on while there is a cursor', () => {
    const ref = { tenantId: 'tnt_1', poolId: 'pool_a' };
    expect(queueListInput(ref, 'pending', {})).toEqual({ ...ref, state: 'pending', limit: 100 });
    const { filter } = queueFilterOf({ q: ' rack-7 ', attestor: null, vouchedBy: null, trusted: 'yes', olderThan: null, newerThan: null });
    expect(queueListInput(ref, toQueueFilter('all'), filter)).toEqual({
      ...ref,
      state: 'all',
      limit: 100,
      search: 'rack-7',
      trustedKey: true,
    });
    expect(nextQueuePage({ nextCursor: 'c1' })).toBe('c1');
    expect(nextQueuePage({ nextCursor: null })).toBeUndefined();
  });
});
