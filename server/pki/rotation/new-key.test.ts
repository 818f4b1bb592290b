import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signEnvelope, verifyEnvelope } from '../../../protocol/envelope';
import { spkiPin } from '../../../protocol/pins';
import { thrownBy } from '../../../test/pki/fixtures';
import { createPkiBundle } from '../bundle/bundle';
import { parsePkiBundle } from '../bundle/bundle-schema';
import { createRootCa, newEcKeyPair } from '../ca/ca';
import { toPem } from '../ca/x509-build';
import { joinCryptoFromBundle } from '../issuance/join-crypto';
import { activateInBundle, prepareInBundle, retireInBundle } from './bundle-steps';
import { importRotatingKey, makeRotatingKey, pinOfKey } from './new-key';
import { signTrusted } from './trust-state';

const bundle = createPkiBundle({ trustDomain: 'keys.example.com' });
const DAY = 86_400_000;
const pkcs8 = (key: ReturnType<typeof newEcKeyPair>['privateKey']) => key.export({ type: 'pkcs8', format: 'pem' }) as string;

describe('rotating keys', () => {
  it('imports a CA kept offline only when it is a P-256 CA matching its key and valid for more than a day', () => {
    const now = new Date();
    const ca = createRootCa('Offline node CA', new Date(now.getTime() - DAY), new Date(now.getTime() + 365 * DAY));
    const good = { certificatePem: toPem(ca.certDer), privateKeyPem: pkcs8(ca.key) };
    expect(pinOfKey(importRotatingKey('node-ca', good, now))).toBe(spkiPin(good.certificatePem));

    const problems: Array<[Parameters<typeof importRotatingKey>, RegExp]> = [
      [['node-ca', { privateKeyPem: good.privateKeyPem }, now], /with its certificate/],
      [['node-ca', { ...good, privateKeyPem: pkcs8(newEcKeyPair().privateKey) }, now], /does not match/],
      [['node-ca', good, new Date(now.getTime() + 365 * DAY)], /not valid now/],
      [['node-ca', bundle.signingKey, now], /not a CA/],
      [['join-signing', good, now], /must not be a CA/],
      [['join-encryption', { privateKeyPem: 'not a key' }, now], /does not parse/],
    ];
    for (const [args, message] of problems) {
      expect(thrownBy(() => importRotatingKey(...args))).toMatchObject({ code: 'INVALID_ARGUMENT', field: 'from', message });
    }
    expect(importRotatingKey('join-signing', bundle.signingKey, now).certificatePem).toBe(
      new X509Certificate(bundle.signingKey.certificatePem).toString(),
    );
  });

  it('keeps the key in use where readers find it, the other key beside it, and the command trust bundle in order', () => {
    const next = makeRotatingKey('command-signing');
    const prepared = prepareInBundle(bundle, 'command-signing', next);
    expect(prepared.commandCa).toEqual(bundle.commandCa);
    expect(prepared.trustVersion).toBe(2);
    const der = (pem: string) => new X509Certificate(pem).raw.toString('base64');
    expect(prepared.commandTrustBundle).toEqual([der(bundle.commandCa.certificatePem), der(next.certificatePem!)]);
    expect(() => prepareInBundle(prepared, 'command-signing', next)).toThrow(/already prepared/);
    const active = activateInBundle(parsePkiBundle(JSON.parse(JSON.stringify(prepared))), 'command-signing');
    expect(active.commandCa.certificatePem).toBe(next.certificatePem);
    expect(active.commandTrustBundle).toEqual([der(next.certificatePem!), der(bundle.commandCa.certificatePem)]);
    const retired = retireInBundle(active, 'command-signing');
    expect(retired.commandTrustBundle).toEqual([der(next.certificatePem!)]);
    expect(retired.rotations).toBeUndefined();
    expect(retired.trustVersion).toBe(4);
  });

  it('signs with every trusted key only during a signing rotation, the same bytes as before otherwise', () => {
    const plain = joinCryptoFromBundle(bundle);
    const body = { status: 'welcome', nodeId: 'node_1' };
    const one = signTrusted(plain.trust, body);
    expect(one.sigs).toBeUndefined();
    expect(one.body).toBe(signEnvelope(body, plain.signingKey).body);
    expect(verifyEnvelope(one, plain.signingKey)).toEqual(body);

    const rotating = joinCryptoFromBundle(prepareInBundle(bundle, 'join-signing', makeRotatingKey('join-signing')));
    const two = signTrusted(rotating.trust, body);
    expect(two.sigs!.map((s) => s.pin)).toEqual(rotating.trust.signingKeys.map((k) => k.pin));
    expect(two.sigs![0]!.sig).toBe(two.sig);
    rotating.trust.signingKeys.forEach((key, i) =>
      expect(verifyEnvelope({ body: two.body, sig: two.sigs![i]!.sig }, key.key)).toEqual(body),
    );
  });
});
