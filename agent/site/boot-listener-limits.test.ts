import type http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { BootLeases, bootHandler, listenOn, MAX_HELD_LEASES } from './boot-listener';
import type { SiteClient } from './site-client';
import { SourceRateLimit } from './source-rate';

// The boot listener's own limits: a lease must name the machine's address (else its token would go to whoever
// asks first), the leases held are capped (oldest out), and each source address is rate limited.

/** A control plane that mints token `n` for the n-th new lease. */
const mintingClient = () => {
  let minted = 0;
  return {
    tokenForLease: async () => {
      minted += 1;
      return { ref: `sref_${String(minted).padStart(32, '0')}`, tokenId: `jt_${minted}`, token: `bcjt_jt_${minted}.secret` };
    },
  } as unknown as SiteClient;
};
const macOf = (i: number) => `3c:ec:ef:${[16, 8, 0].map((shift) => ((i >> shift) & 0xff).toString(16).padStart(2, '0')).join(':')}`;

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

async function serve(leases: BootLeases, rate?: SourceRateLimit) {
  const { server, port } = await listenOn('127.0.0.1:0', bootHandler(leases, { leases: true, boot: true }, rate));
  servers.push(server);
  const url = `http://127.0.0.1:${port}`;
  const post = (body: object) =>
    fetch(`${url}/v1/leases`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { url, post };
}

describe('the lease listener', () => {
  it('refuses a lease that names no ip, and hands a lease token only to its ip', async () => {
    const leases = new BootLeases(mintingClient(), () => {});
    const { url, post } = await serve(leases);
    const bare = await post({ mac: macOf(1), bootLeaseEpoch: 1 });
    expect(bare.status).toBe(400);
    expect(((await bare.json()) as { message: string }).message).toContain('ip');
    expect(leases.size).toBe(0);
    expect((await fetch(`${url}/v1/boot/${macOf(1)}/token`)).status).toBe(404);
    // Another address than the caller's: nothing for the caller.
    expect((await post({ mac: macOf(2), ip: '10.9.9.9', bootLeaseEpoch: 1 })).status).toBe(200);
    expect((await fetch(`${url}/v1/boot/${macOf(2)}/token`)).status).toBe(404);
    expect((await post({ mac: macOf(3), ip: '127.0.0.1', bootLeaseEpoch: 1 })).status).toBe(200);
    expect(await (await fetch(`${url}/v1/boot/${macOf(3)}/token`)).text()).toBe('bcjt_jt_2.secret');
  });

  it('holds at most MAX_HELD_LEASES leases: the one told of longest ago goes first', async () => {
    const leases = new BootLeases(mintingClient(), () => {});
    for (let i = 0; i < MAX_HELD_LEASES + 10; i++) {
      await leases.lease({ mac: macOf(i), ip: '10.0.0.1', bootLeaseEpoch: 1 });
      // The first lease is told of again (a retry) part way, so it is among the newest and stays.
      if (i === 100) await leases.lease({ mac: macOf(0), ip: '10.0.0.1', bootLeaseEpoch: 1 });
    }
    expect(leases.size).toBe(MAX_HELD_LEASES);
    expect(leases.take(macOf(0), '10.0.0.1')).toMatch(/^bcjt_/);
    expect(leases.take(macOf(1), '10.0.0.1')).toBeNull();
    expect(leases.take(macOf(10), '10.0.0.1')).toBeNull();
    expect(leases.take(macOf(11), '10.0.0.1')).toMatch(/^bcjt_/);
    expect(leases.take(macOf(MAX_HELD_LEASES + 9), '10.0.0.1')).toMatch(/^bcjt_/);
  });

  it('answers 429 past the per-source rate, on leases and token fetches alike', async () => {
    const leases = new BootLeases(mintingClient(), () => {});
    const { url, post } = await serve(leases, new SourceRateLimit({ limit: 3, windowMs: 60_000, maxSources: 16 }));
    expect((await post({ mac: macOf(1), ip: '127.0.0.1', bootLeaseEpoch: 1 })).status).toBe(200);
    expect((await fetch(`${url}/v1/boot/${macOf(9)}/token`)).status).toBe(404);
    expect((await fetch(`${url}/v1/boot/${macOf(1)}/token`)).status).toBe(200);
    const limited = await post({ mac: macOf(2), ip: '127.0.0.1', bootLeaseEpoch: 1 });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await fetch(`${url}/v1/boot/${macOf(2)}/token`)).status).toBe(429);
    expect(leases.size).toBe(1);
  });
});

describe('SourceRateLimit', () => {
  it('counts each source in its own window, and remembers at most maxSources of them', () => {
    let now = 0;
    const rate = new SourceRateLimit({ limit: 2, windowMs: 1000, maxSources: 3 }, () => now);
    expect([rate.hit('a'), rate.hit('a'), rate.hit('a')]).toEqual([null, null, 1]);
    expect(rate.hit('b')).toBeNull();
    now = 1000;
    expect(rate.hit('a')).toBeNull();
    for (const source of ['c', 'd', 'e', 'f']) rate.hit(source);
    expect(rate.size).toBe(3);
  });

  it('counts every IPv6 address of one /64 as one source, and another /64 apart', () => {
    const handle = bootHandler(
      new BootLeases(mintingClient(), () => {}),
      { leases: true, boot: true },
      new SourceRateLimit({ limit: 3, windowMs: 60_000, maxSources: 16 }),
    );
    // The handler called directly, as a socket from each address would reach it.
    const fetchFrom = (remoteAddress: string) => {
      let status = 0;
      const res = { writeHead: (code: number) => ((status = code), res), end: () => res };
      handle(
        { url: `/v1/boot/${macOf(5)}/token`, method: 'GET', socket: { remoteAddress } } as http.IncomingMessage,
        res as unknown as http.ServerResponse,
      );
      return status;
    };
    const statuses = ['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2:ffff::3', '2001:db8:1:2::4'].map(fetchFrom);
    expect(statuses).toEqual([404, 404, 404, 429]);
    expect(fetchFrom('2001:db8:1:3::1')).toBe(404);
    expect(fetchFrom('::ffff:10.0.0.1')).toBe(404);
  });
});
