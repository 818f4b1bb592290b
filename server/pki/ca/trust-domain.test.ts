import { describe, expect, it } from 'vitest';
import { DomainError } from '../../../protocol/errors';
import { dnsNameProblem, parseTrustDomain } from './trust-domain';

describe('parseTrustDomain', () => {
  it.each(['compute.example.com', 'a.b', 'x-1.example-2.io', `${'a'.repeat(63)}.com`, 'compute.internal'])('accepts %s', (name) =>
    expect(parseTrustDomain(name)).toBe(name),
  );

  it.each([
    ['', 'must not be empty'],
    ['localhost', 'at least two labels'],
    ['https://compute.example.com', 'without a scheme'],
    ['compute.example.com:8443', 'without a port'],
    ['compute.example.com/path', 'without a path'],
    ['Compute.example.com', 'lowercase'],
    ['compute.example.com.', 'must not end with a dot'],
    ['compute..example.com', 'empty label'],
    ['-compute.example.com', 'hyphen'],
    ['compute-.example.com', 'hyphen'],
    ['comp_ute.example.com', 'only a-z'],
    ['compute example.com', 'only a-z'],
    ['bücher.example.com', 'only a-z'],
    [`${'a'.repeat(64)}.com`, '63 characters'],
    [`${'a.'.repeat(127)}com`, '253 characters'],
    ['10.0.0.1', 'all-numeric'],
    ['*.example.com', 'only a-z'],
  ])('rejects %j (%s)', (name, why) => {
    let thrown: unknown;
    try {
      parseTrustDomain(name);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(DomainError);
    const error = thrown as DomainError;
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.field).toBe('trustDomain');
    expect(error.message).toMatch(/^trustDomain: /);
    expect(error.message).toContain(why);
  });

  it('rejects a value that is not a string', () => {
    expect(() => parseTrustDomain(42)).toThrow('trustDomain: must be a string');
  });
});

describe('dnsNameProblem', () => {
  it('allows a leftmost wildcard and single labels only when asked', () => {
    expect(dnsNameProblem('*.gw.example.com', { minLabels: 1, allowWildcard: true })).toBeUndefined();
    expect(dnsNameProblem('*.com', { minLabels: 1, allowWildcard: true })).toBeDefined();
    expect(dnsNameProblem('gw.*.example.com', { minLabels: 1, allowWildcard: true })).toBeDefined();
    expect(dnsNameProblem('localhost', { minLabels: 1 })).toBeUndefined();
  });
});
