import { describe, expect, it } from 'vitest';
import { applyLabelChange, formatLabelList, labelsSchema, mergeLabels, parseLabelList } from './labels';

describe('labels', () => {
  it('merges sources lowest first: token < rule < expected machine < approval', () => {
    const token = { rack: 'token', env: 'token', zone: 'token', team: 'token' };
    const rule = { env: 'rule', zone: 'rule', team: 'rule' };
    const expected = { zone: 'expected', team: 'expected' };
    const approval = { team: 'approval' };
    expect(mergeLabels(token, rule, expected, approval)).toEqual({ rack: 'token', env: 'rule', zone: 'expected', team: 'approval' });
    expect(mergeLabels(null, undefined, token)).toEqual(token);
  });

  it('reads and writes the k=v;k2=v2 form, refusing a part that is not key=value', () => {
    expect(parseLabelList(' rack=c7 ; env=prod,gpu=h100 ;')).toEqual({ labels: { rack: 'c7', env: 'prod', gpu: 'h100' } });
    expect(parseLabelList('')).toEqual({ labels: {} });
    expect(parseLabelList('rack=c7;Env=prod')).toEqual({ invalid: 'Env=prod' });
    expect(parseLabelList('=x')).toEqual({ invalid: '=x' });
    expect(formatLabelList({ b: '2', a: '1' })).toBe('a=1;b=2');
  });

  it('applies a change: set over the current labels, then remove; replace makes set the whole set', () => {
    const current = { rack: 'c7', env: 'prod' };
    expect(applyLabelChange(current, { set: { env: 'dev', gpu: 'h100' }, remove: ['rack'], replace: false })).toEqual({
      env: 'dev',
      gpu: 'h100',
    });
    expect(applyLabelChange(current, { set: { gpu: 'h100' }, remove: [], replace: true })).toEqual({ gpu: 'h100' });
    expect(current).toEqual({ rack: 'c7', env: 'prod' });
  });

  it('bounds a set: at most 32 labels, keys of the documented form', () => {
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, 'v']));
    expect(labelsSchema.safeParse(many).success).toBe(false);
    expect(labelsSchema.safeParse({ __proto__x: 'v' }).success).toBe(false);
    expect(labelsSchema.safeParse({ 'topology.kubernetes.io/zone': 'a' }).success).toBe(true);
  });
});
