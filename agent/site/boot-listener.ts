import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { addressBucket, sameAddress } from '../../protocol/address-bucket';
import { isPermanentGlobalMac, normalizeMac } from '../../protocol/hardware-claims';
import { parseSiteMintRequest, type SiteMintRequest } from '../../protocol/site-agent-wire';
import type { LeaseToken, SiteClient } from './site-client';
import { SourceRateLimit } from './source-rate';

/** The leases' call (the DHCP server's hook, or a simulator): `POST /v1/leases {mac, ip?, bootLeaseEpoch}`. */
const LEASES_PATH = '/v1/leases';
/** The ramdisk's fetch of its token, once: `GET /v1/boot/<mac>/token`. */
const BOOT_TOKEN = /^\/v1\/boot\/([0-9A-Fa-f:-]{12,17})\/token$/;

interface HeldLease {
  epoch: number;
  ip: string | undefined;
  ref: string;
  tokenId: string;
  /** The bearer token until the ramdisk fetched it (then undefined: it is served once). */
  token: string | undefined;
}

const MAX_LEASE_BODY = 4 * 1024;
/**
 * Leases held at once. A site's cap of live discovery tokens is 64 by default (100,000 at most), and a lease
 * whose token was fetched is kept only to answer a retry; past this the lease told of longest ago is dropped
 * (its token, if not fetched yet, with it: the next lease of that MAC needs a newer epoch).
 */
export const MAX_HELD_LEASES = 4096;
/**
 * Calls per source address and minute, on each listener: the DHCP server's leases (each costs two calls of the
 * control plane's 120 a minute per site agent, so more would be refused there anyway), a ramdisk's fetches.
 */
const LISTENER_CALLS_PER_SOURCE = { limit: 120, windowMs: 60_000, maxSources: 4096 };

const reply = (res: http.ServerResponse, status: number, body: object) => {
  const bytes = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': bytes.length }).end(bytes);
};

/** The address a socket's peer connected from, IPv4-mapped IPv6 written as IPv4. */
const peerAddress = (req: http.IncomingMessage) => (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');

/**
 * What the site agent holds for the site's boot step: per MAC, the lease it was told of and, until the ramdisk
 * fetched it, the discovery token the control plane minted for it. A lease's token is fetched once, and only by a
 * caller from the address the lease named. The token is held in memory only and never logged.
 */
export class BootLeases {
  private readonly leases = new Map<string, HeldLease>();

  constructor(
    private readonly client: SiteClient,
    private readonly log: (line: string) => void,
  ) {}

  /** A lease: mints (a retry of the same epoch finds the same token) and redeems; answers the token id. */
  async lease(lease: SiteMintRequest): Promise<{ mac: string; tokenId: string }> {
    const mac = normalizeMac(lease.mac)!;
    const held = this.leases.get(mac);
    const got: LeaseToken | { ref: string; tokenId: string } = await this.client.tokenForLease(
      lease,
      held && held.epoch === lease.bootLeaseEpoch ? held : undefined,
    );
    const token = 'token' in got ? got.token : held?.ref === got.ref ? held.token : undefined;
    // Re-inserted, so the Map's order is the order leases were last told of; the oldest go first past the cap.
    this.leases.delete(mac);
    this.leases.set(mac, { epoch: lease.bootLeaseEpoch, ip: lease.ip, ref: got.ref, tokenId: got.tokenId, token });
    while (this.leases.size > MAX_HELD_LEASES) this.leases.delete(this.leases.keys().next().value!);
    this.log(`site: lease of ${mac} (epoch ${lease.bootLeaseEpoch}): discovery token ${got.tokenId}`);
    return { mac, tokenId: got.tokenId };
  }

  /** How many leases are held now (at most {@link MAX_HELD_LEASES}). */
  get size(): number {
    return this.leases.size;
  }

  /** The MAC's token for a ramdisk at `from`, once; null when there is none (or not for that address). */
  take(macText: string, from: string): string | null {
    const mac = normalizeMac(macText);
    const held = mac ? this.leases.get(mac) : undefined;
    // A lease held without an address (bootHandler refuses those) gives its token to nobody.
    if (!held?.token || held.ip === undefined || !sameAddress(held.ip, from)) return null;
    const token = held.token;
    held.token = undefined;
    this.log(`site: discovery token ${held.tokenId} handed to the ramdisk of ${mac} at ${from}`);
    return token;
  }
}

/**
 * The site agent's listeners: `leases` takes `POST /v1/leases` (bind it where only the DHCP server reaches it),
 * `boot` serves `GET /v1/boot/<mac>/token` to the ramdisks. The same address may serve both. A lease must name
 * the machine's `ip`: the token is handed only to a ramdisk calling from it, so a lease without one (which would
 * give the token to whoever asks first) is refused. Each source address gets {@link LISTENER_CALLS_PER_SOURCE}
 * calls a minute (429 past it).
 */
export function bootHandler(
  leases: BootLeases,
  serves: { leases: boolean; boot: boolean },
  rate = new SourceRateLimit(LISTENER_CALLS_PER_SOURCE),
) {
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    const url = (req.url ?? '').split('?')[0]!;
    // An IPv6 caller counts by its /64: one host may hold the whole prefix and take a new address per call.
    const retryAfter = rate.hit(addressBucket(peerAddress(req)));
    if (retryAfter !== null) {
      const bytes = Buffer.from(
        JSON.stringify({ code: 'INVALID_STATE', message: `Too many requests from this address; retry after ${retryAfter} seconds` }),
      );
      return void res
        .writeHead(429, {
          'content-type': 'application/json',
          'cache-control': 'no-store',
          'retry-after': String(retryAfter),
          'content-length': bytes.length,
          connection: 'close',
        })
        .end(bytes);
    }
    const boot = BOOT_TOKEN.exec(url);
    if (serves.boot && boot && req.method === 'GET') {
      const token = leases.take(boot[1]!, peerAddress(req));
      if (token === null) return reply(res, 404, { code: 'NOT_FOUND', message: 'No token for this machine' });
      return void res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-store' }).end(token);
    }
    if (!serves.leases || url !== LEASES_PATH) return reply(res, 404, { code: 'NOT_FOUND', message: 'Not found' });
    if (req.method !== 'POST') return reply(res, 405, { code: 'INVALID_ARGUMENT', message: 'Use POST' });
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_LEASE_BODY) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const lease = parseSiteMintRequest(Buffer.concat(chunks).toString('utf8'));
      if (!lease || !isPermanentGlobalMac(lease.mac) || lease.ip === undefined)
        return reply(res, 400, {
          code: 'INVALID_ARGUMENT',
          message: 'A lease is {mac, ip, bootLeaseEpoch}: the token goes only to the ip',
        });
      leases.lease(lease).then(
        (held) => reply(res, 200, held),
        (error: Error) => reply(res, 502, { code: 'UNAVAILABLE', message: `No token for this lease: ${error.message}` }),
      );
    });
  };
}

/** Listens on `host:port` ("127.0.0.1:8470", "[::1]:8470", ":8471"); resolves to the server and its port. */
export function listenOn(address: string, handler: http.RequestListener): Promise<{ server: http.Server; port: number }> {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(address);
  if (!match) throw new Error(`a listen address is host:port, not ${address}`);
  const host = match[1] ?? (match[2] || '0.0.0.0');
  const server = http.createServer(handler);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(match[3]), host, () => resolve({ server, port: (server.address() as AddressInfo).port }));
  });
}
