import http from 'node:http';
import { createHash, X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { GATEWAY_CREDENTIALS_PATH, GATEWAY_CREDENTIALS_REFUSED } from '../../protocol/gateway-credentials-wire';
import { SESSION_LEASE_PATH } from '../../protocol/session-wire';
import { testDb } from '../../test/db';
import { createRotatingPki, type RotatingPki } from '../../test/rotation-pki';
import { startRotationApi, type RotationApi } from '../../test/rotation-api';
import { voucherFromServingChain } from '../gateway/gateway';
import { createPkiBundle, type PkiBundle } from '../pki/bundle/bundle';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { vouchHeaders } from '../vouching/vouch';

// The API's side of a gateway's credentials call: believed only with a gateway's vouching (for no peer) under a
// trusted serving CA; it names the trust version and every trusted node CA, and a new leaf for the gateway's own
// key only when its leaf is not from the serving CA in use or nears its end.

const BASE = '/api/compute';
const PATH = `${BASE}${GATEWAY_CREDENTIALS_PATH}`;
const REFUSED = GATEWAY_CREDENTIALS_REFUSED.body.toString();

type Gateway = { chainPem: string; keyPem: string };
const der64 = (pem: string) => new X509Certificate(pem).raw.toString('base64');
const gatewayOf = (
  bundle: Pick<PkiBundle, 'servingCa'> & { servingCaChain?: string[] },
  sans = ['localhost', '127.0.0.1'],
  ttlDays?: number,
): Gateway => {
  const cert = issueGatewayCertificate(bundle, { sans, ttlDays });
  return { chainPem: cert.chainPem, keyPem: cert.privateKeyPem };
};

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** POSTs `body` to the API, vouched by `gateway` (for `peer`, on `vouchPath`) unless it is null. */
function post(
  api: RotationApi,
  gateway: Gateway | null,
  body: Buffer,
  options: { peer?: Buffer; vouchPath?: string; declaredLength?: number } = {},
): Promise<Reply> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'content-length': String(options.declaredLength ?? body.length),
    ...(gateway
      ? vouchHeaders(voucherFromServingChain(gateway.chainPem, gateway.keyPem), options.peer ?? null, body, options.vouchPath ?? PATH)
      : {}),
  };
  return new Promise((resolve, reject) => {
    const request = http.request(`${api.url}${PATH}`, { method: 'POST', headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
    });
    request.on('error', reject);
    // A declared length beyond the bytes sent: the request stays open until the server answers.
    if (options.declaredLength) request.write(body);
    else request.end(body);
  });
}

const callBody = (csr = generateNodeKeyAndCsr().csrDer, trustVersion = 0) =>
  Buffer.from(JSON.stringify({ csr: csr.toString('base64'), trustVersion }));

let rotating: RotatingPki;
let api: RotationApi;
beforeAll(async () => {
  rotating = createRotatingPki();
  api = await startRotationApi(rotating);
});
afterAll(async () => {
  await api?.close();
});

describe('POST {basePath}/v1/gateway/credentials', () => {
  it('answers the trust version and every trusted node CA, and no chain while the leaf is current', async () => {
    rotating.phase = 'prepared';
    const reply = await post(api, gatewayOf(rotating.old), callBody());
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toEqual({
      trustVersion: 2,
      servingChain: null,
      nodeCas: [rotating.oldCrypto.nodeCaCertificate, rotating.nextCrypto.nodeCaCertificate],
      servingCaChain: [der64(rotating.old.servingCa.certificatePem)],
    });
  });

  it('after activation, issues a leaf from the serving CA in use for the CSR, with the names of the current leaf', async () => {
    rotating.phase = 'activated';
    const next = generateNodeKeyAndCsr();
    const reply = await post(api, gatewayOf(rotating.old, ['gw.example.com', '10.0.0.7']), callBody(next.csrDer, 2));
    expect(reply.status).toBe(200);
    const answer = JSON.parse(reply.body) as {
      trustVersion: number;
      servingChain: [string, string];
      nodeCas: string[];
      servingCaChain: string[];
    };
    expect(answer.trustVersion).toBe(3);
    expect(answer.nodeCas).toEqual([rotating.nextCrypto.nodeCaCertificate, rotating.oldCrypto.nodeCaCertificate]);
    const [leaf, ca] = answer.servingChain.map((c) => new X509Certificate(Buffer.from(c, 'base64')));
    const servingCa = new X509Certificate(rotating.next.servingCa.certificatePem);
    expect(ca!.raw.equals(servingCa.raw)).toBe(true);
    expect(leaf!.verify(servingCa.publicKey)).toBe(true);
    expect(leaf!.publicKey.export({ type: 'spki', format: 'der' }).equals(next.spkiDer)).toBe(true);
    expect(leaf!.subjectAltName).toBe('DNS:gw.example.com, IP Address:10.0.0.7');

    // What follows the leaf until the retirement: the new CA certified by the old one, then the old one.
    const crossChain = rotating.runtime().servingCaChain!;
    expect(new X509Certificate(crossChain[0]!).publicKey.equals(servingCa.publicKey)).toBe(true);
    expect(answer.servingCaChain).toEqual(crossChain.map(der64));

    // A gateway already serving the new CA's leaf gets no chain, whether it sends the cross-certified chain (and
    // vouches with the leaf and the cross-certificate) or the new CA alone.
    for (const gateway of [gatewayOf({ servingCa: rotating.next.servingCa, servingCaChain: crossChain }), gatewayOf(rotating.next)]) {
      const current = await post(api, gateway, callBody());
      expect(current.status).toBe(200);
      expect(JSON.parse(current.body)).toMatchObject({ trustVersion: 3, servingChain: null, servingCaChain: crossChain.map(der64) });
    }
  });

  it('a leaf that expires within a day gets its successor from the same serving CA', async () => {
    rotating.phase = 'before';
    const reply = await post(api, gatewayOf(rotating.old, ['localhost'], 1), callBody());
    const answer = JSON.parse(reply.body) as { servingChain: [string, string] | null };
    expect(answer.servingChain).not.toBeNull();
    const leaf = new X509Certificate(Buffer.from(answer.servingChain![0], 'base64'));
    expect(leaf.verify(new X509Certificate(rotating.old.servingCa.certificatePem).publicKey)).toBe(true);
    expect(Date.parse(leaf.validTo)).toBeGreaterThan(Date.now() + 300 * 86_400_000);
  });

  it('refuses with the same bytes: unvouched, foreign, for a peer, another path, oversized, malformed, a bad CSR, a retired CA', async () => {
    rotating.phase = 'activated';
    const old = gatewayOf(rotating.old);
    const refusals = [
      await post(api, null, callBody()),
      await post(api, gatewayOf(createPkiBundle({ trustDomain: 'other.example.com' })), callBody()),
      await post(api, old, callBody(), { peer: Buffer.from(rotating.oldCrypto.nodeCaCertificate, 'base64') }),
      await post(api, old, callBody(), { vouchPath: `${BASE}${SESSION_LEASE_PATH}` }),
      await post(api, old, Buffer.from(JSON.stringify({ csr: 'A'.repeat(9000), trustVersion: 0 }))),
      await post(api, old, Buffer.from('{"csr":')),
      await post(api, old, Buffer.from(JSON.stringify({ csr: 'AAAA', trustVersion: 1 }))),
    ];
    rotating.phase = 'retired';
    refusals.push(await post(api, old, callBody()));
    for (const reply of refusals) {
      expect(reply.status).toBe(403);
      expect(reply.body).toBe(REFUSED);
    }
    // The new CA's gateway is still answered.
    expect((await post(api, gatewayOf(rotating.next), callBody())).status).toBe(200);
  });

  it('records each answered call of a gateway leaf: its serving CA, names, last seen and the leaf issued to replace it', async () => {
    const leafHash = (chain: string) => createHash('sha256').update(new X509Certificate(chain).raw).digest('hex');
    const rowOf = async (hash: string) =>
      (
        await testDb().$queryRaw<
          { serving_ca_pin: string; names: string[]; first_seen: Date; last_seen: Date; successor_sha256: string | null }[]
        >`
          SELECT serving_ca_pin, names, first_seen, last_seen, successor_sha256 FROM gateway_credential_calls WHERE leaf_sha256 = ${hash}`
      )[0];
    rotating.phase = 'prepared';
    const gateway = gatewayOf(rotating.old, ['gw-recorded.example.com', '10.0.0.9']);
    const hash = leafHash(gateway.chainPem);
    expect((await post(api, gateway, callBody())).status).toBe(200);
    const first = await rowOf(hash);
    expect(first).toMatchObject({
      serving_ca_pin: rotating.pins.oldServingCa,
      names: ['gw-recorded.example.com', '10.0.0.9'],
      successor_sha256: null,
    });
    // Its next call is the same row, seen again; once activated, the answer's new leaf is its successor.
    rotating.phase = 'activated';
    const reply = await post(api, gateway, callBody());
    const leaf = Buffer.from((JSON.parse(reply.body) as { servingChain: [string, string] }).servingChain[0], 'base64');
    const second = await rowOf(hash);
    expect(second!.first_seen).toEqual(first!.first_seen);
    expect(second!.last_seen.getTime()).toBeGreaterThanOrEqual(first!.last_seen.getTime());
    expect(second!.successor_sha256).toBe(createHash('sha256').update(leaf).digest('hex'));
    // The new CA's leaf is a row of its own, under the new pin.
    const current = gatewayOf(rotating.next, ['gw-recorded.example.com']);
    expect((await post(api, current, callBody())).status).toBe(200);
    expect(await rowOf(leafHash(current.chainPem))).toMatchObject({ serving_ca_pin: rotating.pins.nextServingCa, successor_sha256: null });
    // A refused call records nothing.
    rotating.phase = 'retired';
    const refused = gatewayOf(rotating.old, ['gw-refused.example.com']);
    expect((await post(api, refused, callBody())).status).toBe(403);
    expect(await rowOf(leafHash(refused.chainPem))).toBeUndefined();
  });

  it('refuses an unvouched call before reading its body, and closes the connection', async () => {
    const reply = await post(api, null, Buffer.alloc(1024, 0x20), { declaredLength: 8 * 1024 * 1024 });
    expect(reply.status).toBe(403);
    expect(reply.body).toBe(REFUSED);
    expect(reply.headers.connection).toBe('close');
  });

  it('limits each gateway to its rate, counted in PostgreSQL across two API instances', async () => {
    rotating.phase = 'before';
    const keyPrefix = `credentials-flood-${Date.now()}`;
    const apis = [
      await startRotationApi(rotating, { credentialsLimit: { keyPrefix, limit: 5 } }),
      await startRotationApi(rotating, { credentialsLimit: { keyPrefix, limit: 5 } }),
    ];
    try {
      const flooding = gatewayOf(rotating.old);
      const replies = await Promise.all(Array.from({ length: 16 }, (_, i) => post(apis[i % 2]!, flooding, callBody())));
      const statuses = replies.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 200)).toHaveLength(5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(11);
      expect(Number(replies.find((r) => r.status === 429)!.headers['retry-after'])).toBeGreaterThan(0);
      // Another gateway has its own count.
      expect((await post(apis[0]!, gatewayOf(rotating.old), callBody())).status).toBe(200);
    } finally {
      await Promise.all(apis.map((a) => a.close()));
    }
  });
});
