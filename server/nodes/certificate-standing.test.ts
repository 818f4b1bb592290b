import { describe, expect, it } from 'vitest';
import { certificateStanding } from '../../protocol/api/certificate-standing';

const now = Date.parse('2026-06-01T12:00:00Z');
const cert = (over: Partial<{ isCurrent: boolean; revokedAt: string | null; notAfter: string }>) => ({
  isCurrent: false,
  revokedAt: null,
  notAfter: '2026-06-02T12:00:00Z',
  ...over,
});

describe('certificateStanding', () => {
  it('names the current certificate, and an earlier unexpired one as still valid', () => {
    expect(certificateStanding(cert({ isCurrent: true }), now)).toBe('current');
    expect(certificateStanding(cert({}), now)).toBe('valid');
  });
  it('names an expired certificate, the current one included, at its notAfter', () => {
    expect(certificateStanding(cert({ isCurrent: true, notAfter: '2026-06-01T12:00:00Z' }), now)).toBe('expired');
    expect(certificateStanding(cert({ notAfter: '2026-05-01T00:00:00Z' }), now)).toBe('expired');
  });
  it('puts a revocation before expiry', () => {
    expect(certificateStanding(cert({ revokedAt: '2026-05-01T00:00:00Z', notAfter: '2026-05-02T00:00:00Z' }), now)).toBe('revoked');
  });
});
