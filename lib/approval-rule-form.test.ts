import { describe, expect, it } from 'vitest';
import {
  describeMatch,
  INITIAL_RULE_VALUES,
  ruleFieldOf,
  toRuleInput,
  toRuleValues,
  validateRuleForm,
  type RuleFormValues,
} from './approval-rule-form';

const values = (over: Partial<RuleFormValues> = {}, conditions: Partial<RuleFormValues['conditions']> = {}): RuleFormValues => ({
  ...INITIAL_RULE_VALUES,
  name: 'GPU intake',
  poolId: 'pool_1',
  ...over,
  conditions: { ...INITIAL_RULE_VALUES.conditions, ...conditions },
});

describe('the approval-rule form', () => {
  it('turns lines and commas into lists, and keeps the pool only for an approving rule', () => {
    const input = toRuleInput(
      values({ maxAdmissions: '5' }, { vendors: 'Supermicro\nDell*', serials: 'A, B', hostnamePattern: ' gpu-* ' }),
    );
    expect(input).toEqual({
      name: 'GPU intake',
      action: 'approve',
      poolId: 'pool_1',
      maxAdmissions: 5,
      enabled: true,
      match: { vendors: ['Supermicro', 'Dell*'], serials: ['A', 'B'], hostnamePattern: 'gpu-*' },
    });
    expect(toRuleInput(values({ action: 'reject', maxAdmissions: '5' }, { models: 'x' }))).toEqual({
      name: 'GPU intake',
      action: 'reject',
      match: { models: ['x'] },
      enabled: true,
    });
  });
  it('reads a saved rule back into the same values', () => {
    const v = values({ maxAdmissions: '3', enabled: false }, { macPrefixes: '3c:ec:ef', subnets: '10.0.0.0/8\nfd00::/8' });
    const saved = { ...toRuleInput(v), poolId: 'pool_1', maxAdmissions: 3, validUntil: null } as Parameters<typeof toRuleValues>[0];
    expect(toRuleValues(saved)).toEqual(v);
  });
  it('names every problem under its field before sending', () => {
    const errors = validateRuleForm(
      values({ name: '', poolId: '', maxAdmissions: '0', validUntil: '2000-01-01T00:00' }, { macPrefixes: 'zz:11', subnets: '10.0.0.0' }),
    );
    expect(Object.keys(errors).sort()).toEqual(['match.macPrefixes', 'match.subnets', 'maxAdmissions', 'name', 'poolId', 'validUntil']);
    expect(validateRuleForm(values())).toEqual({ match: 'Name at least one condition: a rule without one would match nothing.' });
    expect(validateRuleForm(values({}, { vendors: 'x' }))).toEqual({});
  });
  it('maps the server field names to the form', () => {
    expect(ruleFieldOf('match.subnets.0')).toBe('match.subnets');
    expect(ruleFieldOf('match')).toBe('match');
    expect(ruleFieldOf('poolId')).toBe('poolId');
    expect(ruleFieldOf('siteId')).toBeNull();
    expect(describeMatch({ vendors: ['Supermicro'], hostnamePattern: 'gpu-*' })).toBe('Vendor Supermicro · Hostname gpu-*');
  });
});
