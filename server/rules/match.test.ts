import { describe, expect, it } from 'vitest';
import { firstMatchingRule, matchedOn, ruleMatches, type RuleFacts, type RuleInForce } from './match';

const facts: RuleFacts = {
  attestor: 'discovery',
  vouchedMac: '3c:ec:ef:12:34:56',
  vouchedIp: '10.20.1.7',
  vouchedBy: 'module:boot',
  claims: {
    hostname: 'gpu-a-01',
    productSerial: 'SN-77',
    productUuid: '4C4C4544-0031-4D10-8051-B7C04F443432',
    gpuUuids: ['GPU-abc'],
    sysVendor: 'Supermicro',
    productName: 'SYS-421GE-TNRT',
  },
};
const rule = (over: Partial<RuleInForce>): RuleInForce => ({
  id: 'r',
  name: 'r',
  action: 'approve',
  match: { attestor: 'discovery' },
  maxAdmissions: null,
  admissions: 0,
  validUntil: null,
  ...over,
});

describe('ruleMatches', () => {
  it('matches the vouched MAC by prefix in any notation, the vouched subnet, the voucher and the claims', () => {
    expect(ruleMatches({ macPrefixes: ['3C-EC-EF'] }, facts)).toBe(true);
    expect(ruleMatches({ macPrefixes: ['3cecef12'] }, facts)).toBe(true);
    expect(ruleMatches({ macPrefixes: ['00:11:22'] }, facts)).toBe(false);
    expect(ruleMatches({ subnets: ['10.20.0.0/16'] }, facts)).toBe(true);
    expect(ruleMatches({ subnets: ['10.21.0.0/16', 'fd00::/8'] }, facts)).toBe(false);
    expect(ruleMatches({ subnets: ['fd00::/8'] }, { ...facts, vouchedIp: 'fd00::7' })).toBe(true);
    expect(ruleMatches({ vouchedBy: ['module:boot'] }, facts)).toBe(true);
    expect(ruleMatches({ serials: ['sn-77'] }, facts)).toBe(true);
    expect(ruleMatches({ productUuids: ['4c4c4544-0031-4d10-8051-b7c04f443432'] }, facts)).toBe(true);
    expect(ruleMatches({ gpuUuids: ['gpu-ABC'] }, facts)).toBe(true);
    expect(ruleMatches({ hostnamePattern: 'GPU-?-*' }, facts)).toBe(true);
    expect(ruleMatches({ hostnamePattern: 'gpu-a' }, facts)).toBe(false);
  });
  it('matches the claimed DMI vendor and model with wildcards, case-insensitively, and never a machine that claims none', () => {
    expect(ruleMatches({ vendors: ['supermicro'] }, facts)).toBe(true);
    expect(ruleMatches({ vendors: ['Dell Inc.', 'Super*'], models: ['sys-421ge-*'] }, facts)).toBe(true);
    expect(ruleMatches({ models: ['PowerEdge*'] }, facts)).toBe(false);
    expect(ruleMatches({ vendors: ['Dell*'] }, facts)).toBe(false);
    expect(ruleMatches({ vendors: ['*'] }, { ...facts, claims: { hostname: 'x' } })).toBe(false);
  });
  it('says which conditions rest on what the boot step vouched for and which on claims', () => {
    expect(matchedOn({ macPrefixes: ['3c:ec:ef'], vendors: ['Dell*'], subnets: ['10.0.0.0/8'], hostnamePattern: 'a*' })).toEqual([
      { field: 'macPrefixes', source: 'vouched' },
      { field: 'subnets', source: 'vouched' },
      { field: 'hostnamePattern', source: 'claimed' },
      { field: 'vendors', source: 'claimed' },
    ]);
  });
  it('needs every condition it names, and names at least one', () => {
    expect(ruleMatches({ hostnamePattern: 'gpu-*', serials: ['other'] }, facts)).toBe(false);
    expect(ruleMatches({}, facts)).toBe(false);
    // Claims never stand in for what the boot step vouched for.
    expect(
      ruleMatches({ macPrefixes: ['3c:ec:ef'] }, { ...facts, vouchedMac: null, claims: { ...facts.claims, macs: ['3c:ec:ef:12:34:56'] } }),
    ).toBe(false);
  });
});

describe('firstMatchingRule', () => {
  it('takes the first rule in order that is in force and has admissions left', () => {
    const used = new Map([['full', 1]]);
    const rules = [
      rule({ id: 'expired', validUntil: new Date(0) }),
      rule({ id: 'full', maxAdmissions: 3, admissions: 2 }),
      rule({ id: 'next', action: 'leave' }),
    ];
    expect(firstMatchingRule(rules, facts, new Date(), used)?.id).toBe('next');
    expect(firstMatchingRule(rules, facts, new Date(), new Map())?.id).toBe('full');
  });
  it('skips a disabled rule', () => {
    expect(firstMatchingRule([rule({ id: 'off', enabled: false }), rule({ id: 'on', action: 'reject' })], facts, null, new Map())?.id).toBe(
      'on',
    );
  });
});
