import { describe, expect, it } from 'vitest';
import {
  expectEntries,
  formatAge,
  formatRelative,
  INITIAL_JOIN_TOKEN_VALUES,
  joinTokenErrorMessage,
  joinTokenFieldOf,
  newIdempotencyKey,
  toCreateJoinTokenInput,
  type JoinTokenFormValues,
} from './join-token-form';

const ids = { tenantId: 'tnt_1', poolId: 'pool_1', idempotencyKey: 'k' };
const values = (over: Partial<JoinTokenFormValues> = {}): JoinTokenFormValues => ({ ...INITIAL_JOIN_TOKEN_VALUES, ...over });

describe('toCreateJoinTokenInput', () => {
  it('sends the preset TTL and leaves out an empty binding and hosted', () => {
    expect(toCreateJoinTokenInput(ids, values())).toEqual({ ...ids, ttlSeconds: 3600, maxUses: 1, allowReclaim: false });
  });
  it('sends a custom TTL, trimmed identifiers and hosted', () => {
    const input = toCreateJoinTokenInput(
      ids,
      values({
        ttlChoice: 'custom',
        customTtl: '5400',
        maxUses: '3',
        isHosted: true,
        expect: { serial: ' SN-1 ', mac: '', productUuid: '  ', gpuUuid: '' },
      }),
    );
    expect(input).toMatchObject({ ttlSeconds: 5400, maxUses: 3, hosted: 'kubernetes', expect: { serial: 'SN-1' } });
    expect(input.expect).not.toHaveProperty('mac');
  });
  it('leaves a blank number for the server to refuse', () => {
    expect(toCreateJoinTokenInput(ids, values({ ttlChoice: 'custom', customTtl: '' })).ttlSeconds).toBeNaN();
  });
});

describe('server errors on the form', () => {
  it('maps server fields onto form fields', () => {
    expect(joinTokenFieldOf('expect.mac')).toBe('expect.mac');
    expect(joinTokenFieldOf('expect')).toBe('expect');
    expect(joinTokenFieldOf('ttlSeconds')).toBe('ttlSeconds');
    expect(joinTokenFieldOf('expect.other')).toBeNull();
    expect(joinTokenFieldOf('poolId')).toBeNull();
    expect(joinTokenFieldOf(null)).toBeNull();
  });
  it('drops the field prefix and words a refusal for the role', () => {
    const base = { domainCode: 'INVALID_ARGUMENT', httpStatus: 400 };
    expect(
      joinTokenErrorMessage({ ...base, message: 'expect.mac: must be aa:bb:cc:dd:ee:ff', field: 'expect.mac' }, 'create', 'root'),
    ).toBe('must be aa:bb:cc:dd:ee:ff');
    const denied = {
      message: 'Your role (viewer) does not allow compute:join-tokens:revoke',
      domainCode: 'ACCESS_DENIED',
      field: null,
      httpStatus: 403,
    };
    expect(joinTokenErrorMessage(denied, 'revoke', 'root')).toMatch(
      /^Your role in tenant root lets you see join tokens but not revoke them/,
    );
  });
});

describe('display helpers', () => {
  it('lists a binding in the form’s order', () => {
    expect(expectEntries({ mac: 'aa:bb:cc:dd:ee:ff', serial: 'SN-1' }).map((e) => e.key)).toEqual(['serial', 'mac']);
    expect(expectEntries(null)).toEqual([]);
  });
  it('says how far away a time is', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(formatRelative('2025-01-01T00:59:00Z', now)).toBe('in 59 min');
    expect(formatRelative('2025-01-01T03:20:00Z', now)).toBe('in 3 h 20 min');
    expect(formatRelative('2024-12-29T00:00:00Z', now)).toBe('3 d ago');
  });
  it('says an age as past, and a moment a little ahead of the page clock as just now', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(formatAge('2025-01-01T00:00:20Z', now)).toBe('just now');
    expect(formatAge('2024-12-31T23:59:30Z', now)).toBe('just now');
    expect(formatAge('2024-12-31T23:55:00Z', now)).toBe('5 min ago');
  });
  it('makes a new idempotency key each time', () => {
    expect(newIdempotencyKey()).not.toBe(newIdempotencyKey());
    expect(newIdempotencyKey()).toMatch(/^console-[0-9a-f-]{32,36}$/);
  });
});
