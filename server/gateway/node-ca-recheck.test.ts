import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createPkiBundle } from '../pki/bundle/bundle';
import { NodeCaRecheck } from './node-ca-recheck';

const bundle = createPkiBundle({ trustDomain: 'test.example.com' });
const someCa = new X509Certificate(bundle.nodeCa.certificatePem);
// A certificate that is no node certificate of any CA held: the serving CA's own.
const stranger = new X509Certificate(bundle.servingCa.certificatePem);

describe('NodeCaRecheck', () => {
  it('without a way to ask the API, finds no CA and asks nothing', async () => {
    expect(await new NodeCaRecheck(() => [someCa]).chains(stranger)).toBe(false);
  });

  it('coalesces the rechecks under way into one call, and spaces the next calls by the minimum', async () => {
    const recheck = new NodeCaRecheck(() => [someCa], 200);
    const calls: number[] = [];
    recheck.refresh = async () => void calls.push(performance.now());
    expect(await Promise.all(Array.from({ length: 50 }, () => recheck.chains(stranger)))).toEqual(Array(50).fill(false));
    expect(calls).toHaveLength(1);
    await Promise.all([recheck.chains(stranger), recheck.chains(stranger)]);
    await recheck.chains(stranger);
    expect(calls).toHaveLength(3);
    for (let i = 1; i < calls.length; i++) expect(calls[i]! - calls[i - 1]!).toBeGreaterThanOrEqual(195);
  });

  it('a failed call is a certificate still unknown', async () => {
    const recheck = new NodeCaRecheck(() => [someCa], 0);
    recheck.refresh = () => Promise.reject(new Error('the API is down'));
    expect(await recheck.chains(stranger)).toBe(false);
  });
});
