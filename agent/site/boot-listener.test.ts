import { describe, expect, it } from 'vitest';
import { BootLeases } from './boot-listener';
import type { SiteClient } from './site-client';

// What the boot listener hands out: a lease's token once, only to the lease's address, and a retry of the same
// lease never redeems again (the fake client stands in for the control plane's two calls).

function fakeClient() {
  const calls: { epoch: number; redeemed: boolean }[] = [];
  let n = 0;
  const client = {
    async tokenForLease(lease: { bootLeaseEpoch: number }, redeemed?: { ref: string; tokenId: string }) {
      if (redeemed) {
        calls.push({ epoch: lease.bootLeaseEpoch, redeemed: false });
        return { ref: redeemed.ref, tokenId: redeemed.tokenId };
      }
      calls.push({ epoch: lease.bootLeaseEpoch, redeemed: true });
      n++;
      return { ref: `sref_${String(n).padStart(32, '0')}`, tokenId: `jt_${n}`, token: `bcjt_jt_${n}.secret` };
    },
  } as unknown as SiteClient;
  return { client, calls };
}

describe('the boot listener', () => {
  it('hands a lease token once, only to the address the lease named', async () => {
    const { client } = fakeClient();
    const lines: string[] = [];
    const leases = new BootLeases(client, (l) => lines.push(l));
    expect(await leases.lease({ mac: '3C-EC-EF-00-00-01', ip: '10.0.0.5', bootLeaseEpoch: 1 })).toEqual({
      mac: '3c:ec:ef:00:00:01',
      tokenId: 'jt_1',
    });
    expect(leases.take('3c:ec:ef:00:00:01', '10.0.0.6')).toBeNull();
    expect(leases.take('3cecef000001', '10.0.0.5')).toBe('bcjt_jt_1.secret');
    expect(leases.take('3c:ec:ef:00:00:01', '10.0.0.5')).toBeNull();
    expect(leases.take('3c:ec:ef:00:00:02', '10.0.0.5')).toBeNull();
    expect(lines.join('\n')).not.toContain('secret');
  });

  it('a retry of the same lease keeps its token without redeeming again; a newer lease redeems a new one', async () => {
    const { client, calls } = fakeClient();
    const leases = new BootLeases(client, () => {});
    await leases.lease({ mac: '3c:ec:ef:00:00:03', ip: '127.0.0.1', bootLeaseEpoch: 7 });
    await leases.lease({ mac: '3c:ec:ef:00:00:03', ip: '127.0.0.1', bootLeaseEpoch: 7 });
    expect(calls).toEqual([
      { epoch: 7, redeemed: true },
      { epoch: 7, redeemed: false },
    ]);
    expect(leases.take('3c:ec:ef:00:00:03', '127.0.0.1')).toBe('bcjt_jt_1.secret');
    await leases.lease({ mac: '3c:ec:ef:00:00:03', ip: '127.0.0.1', bootLeaseEpoch: 8 });
    expect(leases.take('3c:ec:ef:00:00:03', '127.0.0.1')).toBe('bcjt_jt_2.secret');
  });

  it('compares the lease address as an address, and a lease held without one gives its token to nobody', async () => {
    const { client } = fakeClient();
    const leases = new BootLeases(client, () => {});
    await leases.lease({ mac: '3c:ec:ef:00:00:04', ip: '2001:0DB8:0:0:0:0:0:0005', bootLeaseEpoch: 1 });
    expect(leases.take('3c:ec:ef:00:00:04', '2001:db8::6')).toBeNull();
    expect(leases.take('3c:ec:ef:00:00:04', '2001:db8::5')).toBe('bcjt_jt_1.secret');
    await leases.lease({ mac: '3c:ec:ef:00:00:05', bootLeaseEpoch: 1 });
    for (const from of ['127.0.0.1', '10.0.0.5', '::1', '']) expect(leases.take('3c:ec:ef:00:00:05', from)).toBeNull();
  });
});
