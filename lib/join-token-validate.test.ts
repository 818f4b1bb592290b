import { describe, expect, it } from 'vitest';
import { parseLifetime } from './duration';
import { INITIAL_JOIN_TOKEN_VALUES, toCreateJoinTokenInput, type JoinTokenFormValues } from './join-token-form';
import { validateJoinTokenForm } from './join-token-validate';

const values = (over: Partial<JoinTokenFormValues> = {}): JoinTokenFormValues => ({ ...INITIAL_JOIN_TOKEN_VALUES, ...over });
const noExpect = INITIAL_JOIN_TOKEN_VALUES.expect;

describe('parseLifetime', () => {
  it('reads durations as the CLI --ttl does, and bare seconds', () => {
    expect(parseLifetime('1h30m')).toBe(5400);
    expect(parseLifetime('90m')).toBe(5400);
    expect(parseLifetime('1h 30m')).toBe(5400);
    expect(parseLifetime('24h')).toBe(86_400);
    expect(parseLifetime('90s')).toBe(90);
    expect(parseLifetime('5400')).toBe(5400);
  });
  it('gives NaN for what is not a duration', () => {
    for (const text of ['', ' ', '30m1h', 'an hour', '1.5h', 'h', '-60']) expect(parseLifetime(text), text).toBeNaN();
  });
  it('is what the form sends as ttlSeconds', () => {
    const input = toCreateJoinTokenInput(
      { tenantId: 't', poolId: 'p', idempotencyKey: 'k' },
      values({ ttlChoice: 'custom', customTtl: '1h30m' }),
    );
    expect(input.ttlSeconds).toBe(5400);
  });
});

describe('validateJoinTokenForm', () => {
  it('finds nothing wrong with the defaults', () => {
    expect(validateJoinTokenForm(values())).toEqual({});
  });

  it('reports every bad field at once, each under its own field', () => {
    const errors = validateJoinTokenForm(
      values({
        ttlChoice: 'custom',
        customTtl: '25h',
        maxUses: '0',
        expect: { ...noExpect, mac: 'aa-bb-cc', gpuUuid: 'nvidia', productUuid: 'not-a-uuid' },
      }),
    );
    expect(Object.keys(errors).sort()).toEqual(['expect.gpuUuid', 'expect.mac', 'expect.productUuid', 'maxUses', 'ttlSeconds']);
    expect(errors.ttlSeconds).toMatch(/90000 seconds; use 1m to 24h/);
    expect(errors.maxUses).toBe('use a whole number from 1 to 10000');
    // The server's own words, without the `expect.mac: ` prefix the label already says.
    expect(errors['expect.mac']).toBe('must be aa:bb:cc:dd:ee:ff');
    expect(errors['expect.gpuUuid']).toBe('must be GPU- followed by a UUID');
  });

  it('refuses a well-formed but locally administered MAC, as the server does', () => {
    expect(validateJoinTokenForm(values({ expect: { ...noExpect, mac: '02:00:00:00:00:01' } }))['expect.mac']).toMatch(
      /globally administered/,
    );
    expect(validateJoinTokenForm(values({ expect: { ...noExpect, mac: '3c:ec:ef:00:00:01' } }))).toEqual({});
  });

  it('accepts 1h30m as a custom lifetime and refuses one under a minute', () => {
    expect(validateJoinTokenForm(values({ ttlChoice: 'custom', customTtl: '1h30m' }))).toEqual({});
    expect(validateJoinTokenForm(values({ ttlChoice: 'custom', customTtl: '30s' })).ttlSeconds).toMatch(/30 seconds/);
    expect(validateJoinTokenForm(values({ ttlChoice: 'custom', customTtl: 'soon' })).ttlSeconds).toMatch(/like 90m, 1h30m/);
  });
});
