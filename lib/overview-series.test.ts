import { describe, expect, it } from 'vitest';
import { formatSeconds, joinSeries, renewalSeries, type Overview } from './overview-series';
import { explainRefusal } from './refusal-reasons';

const hours = Array.from({ length: 4 }, (_, i) => new Date(Date.UTC(2026, 11, 1, i)).toISOString());
const overview = (over: Partial<Overview['joins']> = {}): Overview => ({
  range: '24h',
  hours,
  joins: {
    admitted: [
      { key: 'join-token', counts: [1, 2, 0, 0] },
      { key: 'discovery', counts: [0, 1, 0, 0] },
    ],
    pending: [{ key: 'discovery', counts: [0, 0, 3, 0] }],
    refused: [],
    ...over,
  },
  renewals: {
    renewed: [5, 0, 0, 1],
    refused: [
      { key: 'revoked', counts: [0, 1, 0, 0] },
      { key: 'expired', counts: [0, 1, 1, 0] },
    ],
  },
  queue: [],
  decisions: [],
  expiring: [],
  connected: [],
});
const href = (reason?: string) => `/refused-joins${reason ? `?reason=${reason}` : ''}`;

describe('the overview charts', () => {
  it('stack joins by outcome, by attestor (admitted and pending) and by refusal reason', () => {
    expect(joinSeries(overview(), 'outcome', href).map((s) => [s.key, s.counts])).toEqual([
      ['admitted', [1, 3, 0, 0]],
      ['pending', [0, 0, 3, 0]],
      ['refused', [0, 0, 0, 0]],
    ]);
    expect(joinSeries(overview(), 'attestor', href).map((s) => [s.key, s.counts])).toEqual([
      ['discovery', [0, 1, 3, 0]],
      ['join-token', [1, 2, 0, 0]],
    ]);
    const refused = Array.from({ length: 8 }, (_, i) => ({ key: `join-token:r${i}`, counts: [8 - i, 0, 0, 0] }));
    const byReason = joinSeries(overview({ refused }), 'reason', href);
    expect(byReason.map((s) => s.label)).toEqual([
      'join-token:r0',
      'join-token:r1',
      'join-token:r2',
      'join-token:r3',
      'join-token:r4',
      'join-token:r5',
      '2 other',
    ]);
    expect(byReason[0]!.href).toBe('/refused-joins?reason=join-token:r0');
    // The legend says each reason in words, as the refused-joins page explains it.
    const named = joinSeries(overview({ refused: [{ key: 'tpm:enrollment', counts: [1, 0, 0, 0] }] }), 'reason', href);
    expect(named[0]!.description).toBe(explainRefusal('tpm:enrollment').meaning);
    expect(named[0]!.description).not.toMatch(/does not know/);
    expect(byReason.at(-1)).toMatchObject({ counts: [3, 0, 0, 0], href: undefined });
  });

  it('sum refused renewals, and say durations in words', () => {
    expect(renewalSeries(overview()).map((s) => s.counts)).toEqual([
      [5, 0, 0, 1],
      [0, 2, 1, 0],
    ]);
    expect([45, 720, 3600, 12_000, 200_000].map(formatSeconds)).toEqual(['45 s', '12 min', '1 h', '3 h 20 min', '2 d 7 h']);
  });
});
