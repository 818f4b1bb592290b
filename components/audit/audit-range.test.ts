import { describe, expect, it } from 'vitest';
import { auditExportHref, rangeBounds } from './audit-range';

describe('the audit page time range', () => {
  const now = Date.parse('2026-12-07T12:00:00Z');

  it('counts a preset back from now, and reads a custom range as local date-times', () => {
    expect(rangeBounds({ range: null, from: null, to: null }, now)).toEqual({});
    expect(rangeBounds({ range: '24h', from: null, to: null }, now)).toEqual({ since: '2026-12-06T12:00:00.000Z' });
    const custom = rangeBounds({ range: 'custom', from: '2026-12-01T08:30', to: '' }, now);
    expect(custom).toEqual({ since: new Date('2026-12-01T08:30').toISOString() });
    expect(rangeBounds({ range: 'custom', from: 'not a date', to: '2026-12-02T00:00' }, now)).toEqual({
      until: new Date('2026-12-02T00:00').toISOString(),
    });
  });

  it('links the export with the same filters, leaving out the empty ones', () => {
    expect(
      auditExportHref('tnt_1', { actionEquals: 'join-token.revoked', actorEquals: undefined, since: '2026-12-06T12:00:00.000Z' }),
    ).toBe('/api/compute/v1/tenants/tnt_1/audit/export.csv?actionEquals=join-token.revoked&since=2026-12-06T12%3A00%3A00.000Z');
    expect(auditExportHref('tnt_1', {})).toBe('/api/compute/v1/tenants/tnt_1/audit/export.csv');
  });
});
