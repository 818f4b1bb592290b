import https from 'node:https';
import http from 'node:http';
import { generateKeyPairSync, sign } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareJoinAttempt, type JoinTrust } from '../../agent/join';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { machineClaims } from '../../test/join-harness';
import { randomMac } from '../../test/discovery-harness';
import { reservePort, startTestGateway } from '../../test/gateway-process';
import {
  createServerDatabase,
  defaultPool,
  newServerSecret,
  serverTrust,
  startServerProcess,
  type ServerDatabase,
  type ServerProcess,
} from '../../test/server-process';
import { issueJoinToken } from '../tokens/issue';
import { VOUCH_HEADER } from '../vouching/vouch';

// The address a join came from is recorded on its join request and its refusal event: the socket's peer for
// a direct call, and for a join the gateway relayed, the gateway's caller, which the API believes only inside
// the gateway's signed vouching. Real processes: the server process (the agent endpoints' join path) and the
// gateway process. Linux routes all of 127.0.0.0/8 to the loopback, so a client can call from 127.0.0.x.

const BASE = '/api/compute';
const secret = newServerSecret();
let database: ServerDatabase;
let server: ServerProcess;
let gateway: Awaited<ReturnType<typeof startTestGateway>>;
let trust: JoinTrust;
let site: { tenantId: string; siteId: string };

beforeAll(async () => {
  database = await createServerDatabase('caller_address');
  server = await startServerProcess({ databaseUrl: database.url, secret });
  gateway = await startTestGateway({ db: database.db, secret, port: await reservePort(), apiUrl: server.url });
  trust = await serverTrust(database.db, secret);
  const pool = await defaultPool(database.db);
  site = { tenantId: pool.ownerTenantId, siteId: pool.siteId };
}, 120_000);
afterAll(async () => {
  await gateway?.stop();
  await server?.stop();
  await database?.close();
});

/** POSTs a join body from `localAddress`, to the gateway (TLS) or straight to the API. */
function post(url: string, body: string, localAddress: string, headers: Record<string, string> = {}): Promise<number> {
  const target = new URL(`${url}${BASE}/v1/join`);
  const lib = target.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(
      target,
      {
        method: 'POST',
        localAddress,
        rejectUnauthorized: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function discoveryJoin() {
  const mac = randomMac();
  const { token } = await issueJoinToken(database.db, {
    ...site,
    poolId: null,
    role: 'discovery',
    ttlSeconds: 600,
    maxUses: 1,
    boundMac: mac,
    createdBy: 'module:boot',
  });
  const { body } = await prepareJoinAttempt({
    token: token!,
    trust,
    claims: machineClaims({ macs: [mac] }),
    role: 'discovery',
    attestor: 'discovery',
    keys: generateNodeKeyAndCsr(),
  });
  return { mac, body };
}
const requestOf = (mac: string) => database.db.joinRequest.findFirstOrThrow({ where: { mac } });

describe('the client address of joins', { timeout: 60_000 }, () => {
  it('records the caller of a direct join, and the gateway-vouched caller of a relayed one', async () => {
    const direct = await discoveryJoin();
    expect(await post(server.url, direct.body, '127.0.0.3')).toBe(200);
    expect((await requestOf(direct.mac)).clientAddress).toBe('127.0.0.3');

    // Through the gateway: the API's socket peer is the gateway; the caller is what the gateway vouched for.
    const relayed = await discoveryJoin();
    expect(await post(gateway.url, relayed.body, '127.0.0.4')).toBe(200);
    expect((await requestOf(relayed.mac)).clientAddress).toBe('127.0.0.4');
  });

  it('never believes an address in a vouching the gateway did not sign', async () => {
    const forged = await discoveryJoin();
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const payload = Buffer.from(
      JSON.stringify({
        chain: ['AA', 'AA'],
        peer: '',
        body: '',
        path: `${BASE}/v1/join`,
        iat: Math.floor(Date.now() / 1000),
        addr: '203.0.113.9',
      }),
    );
    const vouch = `${payload.toString('base64url')}.${sign('sha256', payload, { key, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`;
    expect(await post(server.url, forged.body, '127.0.0.5', { [VOUCH_HEADER]: vouch, 'x-forwarded-for': '198.51.100.7' })).toBe(200);
    expect((await requestOf(forged.mac)).clientAddress).toBe('127.0.0.5');
  });

  it('puts the caller on the refusal event, through the gateway too', async () => {
    const bad = await discoveryJoin();
    const [header, , iv, ciphertext, tag] = (JSON.parse(bad.body) as { sealedToken: string }).sealedToken.split('.');
    // A seal whose ciphertext was tampered with cannot be opened: join:token, before any tenant is known.
    const tampered = JSON.stringify({
      ...JSON.parse(bad.body),
      sealedToken: [header, '', iv, ciphertext!.slice(0, -2) + 'AA', tag].join('.'),
    });
    expect(await post(gateway.url, tampered, '127.0.0.6')).toBe(403);
    const event = await database.db.event.findFirst({
      where: { type: 'security.join.refused', data: { path: ['clientAddress'], equals: '127.0.0.6' } },
    });
    expect(event?.data).toMatchObject({ clientAddress: '127.0.0.6', reason: expect.stringMatching(/^join:/) });
  });
});
