import { createECDH, createPrivateKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readServerHello } from './handshake';
import { applicationSecrets, handshakeSecrets, hkdfExpandLabel, nextTrafficSecret, trafficKeys } from './key-schedule';
import { RecordCipher, CONTENT } from './record';

// RFC 8448 §3, "Simple 1-RTT Handshake": the published values.
const hex = (s: string) => Buffer.from(s, 'hex');
const SHARED = hex('8bd4054fb55b9d63fdfbacf9f04b9f0d35e6d63f537563efd46272900f89492d');
const HELLO_HASH = hex('860c06edc07858ee8e78f0e7428c58edd6b43f2ca3e6e95f02ed063cf0e1cad8');
const SERVER_FINISHED_HASH = hex('9608102a0f1ccc6db6250b7b7e417b1a000eaada3daae4777a7686c9ff83df13');
const SERVER_HELLO_BODY = hex(
  '0303a6af06a4121860dc5e6e60249cd34c95930c8ac5cb1434dac155772ed3e2692800130100002e00330024001d0020c9828876112095fe66762bdbf7c672e156d6cc253b833df1dd69b1b04e751f0f002b00020304',
);
const CLIENT_X25519_PRIVATE = hex('49af42ba7f7994852d713ef2784bcbcaa7911de26adc5642cb634540e7ea5005');
const CLIENT_X25519_PUBLIC = hex('99381de560e4bd43d23d8e435a7dbafeb3c06e51c13cae4d5413691e529aaf2c');

describe('TLS 1.3 key schedule (RFC 8448 §3)', () => {
  it('derives the handshake traffic secrets, keys and IVs', () => {
    const s = handshakeSecrets(SHARED, HELLO_HASH);
    expect(s.handshakeSecret.toString('hex')).toBe('1dc826e93606aa6fdc0aadc12f741b01046aa6b99f691ed221a9f0ca043fbeac');
    expect(s.clientHandshakeTraffic.toString('hex')).toBe('b3eddb126e067f35a780b3abf45e2d8f3b1a950738f52e9600746a0e27a55a21');
    expect(s.serverHandshakeTraffic.toString('hex')).toBe('b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38');
    const server = trafficKeys(s.serverHandshakeTraffic);
    expect([server.key.toString('hex'), server.iv.toString('hex')]).toEqual([
      '3fce516009c21727d0f2e4e86ee403bc',
      '5d313eb2671276ee13000b30',
    ]);
    const client = trafficKeys(s.clientHandshakeTraffic);
    expect([client.key.toString('hex'), client.iv.toString('hex')]).toEqual([
      'dbfaa693d1762c5b666af5d950258d01',
      '5bd3c71b836e0b76bb73265f',
    ]);
    expect(hkdfExpandLabel(s.serverHandshakeTraffic, 'finished', Buffer.alloc(0), 32).toString('hex')).toBe(
      '008d3b66f816ea559f96b537e885c31fc068bf492c652f01f288a1d8cdc19fc8',
    );
    expect(hkdfExpandLabel(s.clientHandshakeTraffic, 'finished', Buffer.alloc(0), 32).toString('hex')).toBe(
      'b80ad01015fb2f0bd65ff7d4da5d6bf83f84821d1f87fdc7d3c75b5a7b42d9c4',
    );
  });

  it('derives the application traffic secrets', () => {
    const { handshakeSecret } = handshakeSecrets(SHARED, HELLO_HASH);
    const ap = applicationSecrets(handshakeSecret, SERVER_FINISHED_HASH);
    expect(ap.clientApplicationTraffic.toString('hex')).toBe('9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5');
    expect(ap.serverApplicationTraffic.toString('hex')).toBe('a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643');
    expect(trafficKeys(ap.serverApplicationTraffic).key.toString('hex')).toBe('9f02283b6c9c07efc26bb9f2ac92e356');
    // A KeyUpdate's next secret is a different key (§7.2).
    expect(nextTrafficSecret(ap.serverApplicationTraffic).equals(ap.serverApplicationTraffic)).toBe(false);
  });

  it("reads the trace's ServerHello and computes its x25519 shared secret", () => {
    const privateKey = createPrivateKey({
      key: { kty: 'OKP', crv: 'X25519', d: CLIENT_X25519_PRIVATE.toString('base64url'), x: CLIENT_X25519_PUBLIC.toString('base64url') },
      format: 'jwk',
    });
    const secp256r1 = createECDH('prime256v1');
    secp256r1.generateKeys();
    // The trace's ClientHello has an empty legacy_session_id: byte 34 is its length.
    const clientHello = Buffer.alloc(40);
    expect(readServerHello(SERVER_HELLO_BODY, clientHello, { x25519: { privateKey, publicRaw: CLIENT_X25519_PUBLIC }, secp256r1 })).toEqual(
      SHARED,
    );
    // Any change to the echoed session id, the suite or the version is refused.
    const otherSession = Buffer.from(clientHello);
    otherSession[34] = 1;
    expect(() =>
      readServerHello(SERVER_HELLO_BODY, otherSession, { x25519: { privateKey, publicRaw: CLIENT_X25519_PUBLIC }, secp256r1 }),
    ).toThrow(/session id/);
    const otherSuite = Buffer.from(SERVER_HELLO_BODY);
    otherSuite[35] = 0x02;
    expect(() => readServerHello(otherSuite, clientHello, { x25519: { privateKey, publicRaw: CLIENT_X25519_PUBLIC }, secp256r1 })).toThrow(
      /suite/,
    );
  });

  it('protects records: a sealed record opens under the same secret, and one flipped bit fails', () => {
    const secret = hex('a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643');
    const record = new RecordCipher(secret).seal(CONTENT.applicationData, Buffer.from('hello'));
    const opened = new RecordCipher(secret).open({ type: record[0]!, fragment: record.subarray(5) });
    expect(opened).toEqual({ type: CONTENT.applicationData, fragment: Buffer.from('hello') });
    const tampered = Buffer.from(record);
    tampered[7]! ^= 1;
    expect(() => new RecordCipher(secret).open({ type: tampered[0]!, fragment: tampered.subarray(5) })).toThrow(/authenticate/);
  });
});
