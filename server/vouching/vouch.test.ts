import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { voucherFromServingChain } from '../gateway/gateway';
import { createPkiBundle } from '../pki/bundle/bundle';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { installPins } from '../pki/pins-summary';
import { PEER_HEADER, VOUCH_HEADER, vouchedPeer, vouchHeaders } from './vouch';

const bundle = createPkiBundle({ trustDomain: 'vouch.example.com' });
const gateway = issueGatewayCertificate(bundle, { sans: ['localhost'] });
const voucher = voucherFromServingChain(gateway.chainPem, gateway.privateKeyPem);
const pin = installPins(bundle).servingCaPin;
const peer = Buffer.from('a peer certificate');
const body = Buffer.from('{"csr":"..."}');
const PATH = '/api/compute/v1/renew';
const check = (h: Record<string, string>, overrides: { body?: Buffer; path?: string; pin?: string; now?: number } = {}) =>
  vouchedPeer(
    { vouch: h[VOUCH_HEADER], peer: h[PEER_HEADER] },
    overrides.body ?? body,
    overrides.path ?? PATH,
    overrides.pin ?? pin,
    overrides.now,
  );

describe('gateway vouching', () => {
  it('believes the peer of a fresh assertion that binds this body and path under the pinned serving CA', () => {
    expect(check(vouchHeaders(voucher, peer, body, PATH))?.toString()).toBe(peer.toString());
    expect(check(vouchHeaders(voucher, null, body, PATH))).toBe('no-peer');
  });

  it('signs exactly the JSON of the assertion: chain, peer hash, body hash, path, time', () => {
    const now = Date.UTC(2026, 11, 1);
    const payload = vouchHeaders(voucher, peer, body, '/a "quoted" path', now)[VOUCH_HEADER]!.split('.')[0]!;
    const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
    expect(Buffer.from(payload, 'base64url').toString()).toBe(
      JSON.stringify({ chain: voucher.chainB64, peer: sha(peer), body: sha(body), path: '/a "quoted" path', iat: now / 1000 }),
    );
    expect(
      JSON.parse(Buffer.from(vouchHeaders(voucher, null, body, PATH, now)[VOUCH_HEADER]!.split('.')[0]!, 'base64url').toString()).peer,
    ).toBe('');
  });

  it('refuses another body, another path, another peer, a stale assertion, or another serving CA', () => {
    const headers = vouchHeaders(voucher, peer, body, PATH);
    expect(check(headers, { body: Buffer.from('{}') })).toBeNull();
    expect(check(headers, { path: '/api/compute/v1/join' })).toBeNull();
    expect(check({ ...headers, [PEER_HEADER]: Buffer.from('another').toString('base64') })).toBeNull();
    expect(check(headers, { now: Date.now() + 31_000 })).toBeNull();
    expect(check(headers, { pin: installPins(createPkiBundle({ trustDomain: 'other.example.com' })).servingCaPin })).toBeNull();
  });

  it('refuses a plain peer header, and an assertion signed by a key the serving CA did not certify', () => {
    expect(check({ [PEER_HEADER]: peer.toString('base64') })).toBeNull();
    const node = issueGatewayCertificate(createPkiBundle({ trustDomain: 'x.example.com' }), { sans: ['localhost'] });
    const forged = vouchHeaders(
      { ...voucherFromServingChain(node.chainPem, node.privateKeyPem), chainB64: voucher.chainB64 },
      peer,
      body,
      PATH,
    );
    expect(check(forged)).toBeNull();
    // A tampered payload (the peer hash swapped) no longer verifies.
    const [payload, sig] = vouchHeaders(voucher, peer, body, PATH)[VOUCH_HEADER]!.split('.');
    const json = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    json.peer = createHash('sha256').update('another').digest('hex');
    expect(
      check({
        [VOUCH_HEADER]: `${Buffer.from(JSON.stringify(json)).toString('base64url')}.${sig}`,
        [PEER_HEADER]: Buffer.from('another').toString('base64'),
      }),
    ).toBeNull();
  });
});
