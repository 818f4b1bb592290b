import { X509Certificate, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { signEnvelope } from '../protocol/envelope';
import { tlv } from '../protocol/der/writer';
import { spkiPin } from '../protocol/pins';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from './keys';
import { JoinAnswerError, verifyJoinAnswer, type JoinAnswerCheck } from './verify-answer';

const DOMAIN = 'compute.example.com';

let signingKey: KeyObject;
let signingCertificateDer: Buffer;
let caKey: KeyObject;
let agent: NodeKeyAndCsr;

// Built by hand: @peculiar/x509 needs a Reflect metadata polyfill the project does not ship.
const utf8 = (text: string) => tlv(0x0c, Buffer.from(text));
const name = (attributes: [string, string][]) =>
  tlv(0x30, ...attributes.map(([oid, value]) => tlv(0x31, tlv(0x30, tlv(0x06, Buffer.from(oid, 'hex')), utf8(value)))));
const CN = '550403';
const OU = '55040b';

function certificate(spki: Buffer, subject: [string, string][], issuerKey: KeyObject, uris: string[] = []): Buffer {
  const time = (text: string) => tlv(0x17, Buffer.from(text));
  const san = tlv(0x30, tlv(0x06, Buffer.from('551d11', 'hex')), tlv(0x04, tlv(0x30, ...uris.map((uri) => tlv(0x86, Buffer.from(uri))))));
  const tbs = tlv(
    0x30,
    tlv(0xa0, Buffer.from('020102', 'hex')),
    Buffer.from('020101', 'hex'),
    Buffer.from('300a06082a8648ce3d040302', 'hex'),
    name([[CN, 'node CA']]),
    tlv(0x30, time('250101000000Z'), time('350101000000Z')),
    name(subject),
    spki,
    ...(uris.length ? [tlv(0xa3, tlv(0x30, san))] : []),
  );
  const sig = sign('sha256', tbs, { key: issuerKey, dsaEncoding: 'der' });
  return tlv(0x30, tbs, Buffer.from('300a06082a8648ce3d040302', 'hex'), tlv(0x03, Buffer.from([0]), sig));
}

function issueLeaf(options: { spki?: Buffer; uris?: string[]; ous?: string[] } = {}): string {
  const uris = options.uris ?? [`spiffe://${DOMAIN}/site/site_1/node/node_1`];
  const ous = options.ous ?? ['bc-role:node'];
  const der = certificate(options.spki ?? agent.spkiDer, [[CN, 'node_1'], ...ous.map((ou): [string, string] => [OU, ou])], caKey, uris);
  new X509Certificate(der); // the fixture itself must be a certificate OpenSSL reads
  return der.toString('base64');
}

function joined(overrides: Record<string, unknown> = {}, leafOptions?: Parameters<typeof issueLeaf>[0]) {
  const body = {
    status: 'joined',
    nodeId: 'node_1',
    certificateChain: [issueLeaf(leafOptions), 'AAAA'],
    commandTrustBundle: ['AAAA'],
    csrSha256: agent.csrSha256,
    trustDomain: DOMAIN,
    siteId: 'site_1',
    role: 'node',
    ...overrides,
  };
  return signEnvelope(body, signingKey);
}

const options = () => ({
  signingKeyPin: spkiPin(signingKey),
  signingCertificateDer,
  csrSha256: agent.csrSha256,
  publicKeySpkiDer: agent.spkiDer,
  trustDomain: DOMAIN,
  expectedRole: 'node',
});

function failedCheck(fn: () => unknown): { check: JoinAnswerCheck; message: string } {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(JoinAnswerError);
    return { check: (error as JoinAnswerError).check, message: (error as Error).message };
  }
  throw new Error('expected a JoinAnswerError');
}

beforeAll(() => {
  const signing = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  signingKey = signing.privateKey;
  signingCertificateDer = certificate(signing.publicKey.export({ type: 'spki', format: 'der' }), [[CN, 'join signing']], signingKey);
  caKey = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  agent = generateNodeKeyAndCsr();
});

describe('verifyJoinAnswer', () => {
  it('accepts an answer that passes every check', () => {
    const answer = verifyJoinAnswer(joined(), options());
    expect(answer).toMatchObject({ status: 'joined', nodeId: 'node_1', siteId: 'site_1', role: 'node', trustDomain: DOMAIN });
    const withStatement = joined({}, { uris: [`spiffe://${DOMAIN}/site/site_1/node/node_1`, 'urn:bc:tpm-ak:sha256:ab'] });
    expect(verifyJoinAnswer(withStatement, { ...options(), trustDomain: undefined }).status).toBe('joined');
  });

  it('returns a pending answer after the signature and CSR checks', () => {
    const pending = signEnvelope({ status: 'pending', requestId: 'jreq_1', retryAfterSeconds: 30, csrSha256: agent.csrSha256 }, signingKey);
    expect(verifyJoinAnswer(pending, options())).toEqual({
      status: 'pending',
      requestId: 'jreq_1',
      retryAfterSeconds: 30,
      csrSha256: agent.csrSha256,
    });
    const other = signEnvelope({ status: 'pending', requestId: 'jreq_1', retryAfterSeconds: 30, csrSha256: 'ab'.repeat(32) }, signingKey);
    expect(failedCheck(() => verifyJoinAnswer(other, options())).check).toBe('csr');
  });

  it('checks the signature under the pinned key first', () => {
    const envelope = joined({ csrSha256: 'ab'.repeat(32) });
    expect(failedCheck(() => verifyJoinAnswer(envelope, { ...options(), signingKeyPin: 'sha256/AAAA' })).message).toMatch(
      /join_signing_key_pin/,
    );
    const forged = { ...envelope, sig: signEnvelope({}, caKey).sig };
    expect(failedCheck(() => verifyJoinAnswer(forged, options())).message).toMatch(/not signed by the pinned/);
    expect(failedCheck(() => verifyJoinAnswer(envelope, { ...options(), signingCertificateDer: undefined })).check).toBe('signature');
    expect(failedCheck(() => verifyJoinAnswer(envelope, { ...options(), signingCertificateDer: Buffer.from('junk') })).check).toBe(
      'signature',
    );
    const byKey = { ...options(), signingCertificateDer: undefined, signingPublicKey: createPublicKey(signingKey) };
    expect(failedCheck(() => verifyJoinAnswer(envelope, byKey)).check).toBe('csr');
    expect(failedCheck(() => verifyJoinAnswer(envelope, options())).check).toBe('csr');
  });

  it('checks that the leaf certifies this agent key', () => {
    const other = generateNodeKeyAndCsr();
    const envelope = joined({}, { spki: other.spkiDer });
    const { check, message } = failedCheck(() => verifyJoinAnswer(envelope, options()));
    expect([check, message]).toEqual(['key', "The leaf certificate does not certify this agent's key"]);
  });

  it('checks the SPIFFE SAN', () => {
    const wrongNode = joined({}, { uris: [`spiffe://${DOMAIN}/site/site_1/node/node_2`] });
    expect(failedCheck(() => verifyJoinAnswer(wrongNode, options())).message).toMatch(/first URI SAN/);
    const notFirst = joined({}, { uris: ['urn:bc:x', `spiffe://${DOMAIN}/site/site_1/node/node_1`] });
    expect(failedCheck(() => verifyJoinAnswer(notFirst, options())).check).toBe('san');
    const twoIds = joined({}, { uris: [`spiffe://${DOMAIN}/site/site_1/node/node_1`, `spiffe://${DOMAIN}/site/site_1/node/node_2`] });
    expect(failedCheck(() => verifyJoinAnswer(twoIds, options())).check).toBe('san');
    const otherDomain = joined({ trustDomain: 'evil.example.com' }, { uris: ['spiffe://evil.example.com/site/site_1/node/node_1'] });
    expect(failedCheck(() => verifyJoinAnswer(otherDomain, options())).message).toMatch(/trust domain/);
  });

  it('checks the role in the body and in the leaf', () => {
    const bodyRole = joined({ role: 'site' });
    expect(failedCheck(() => verifyJoinAnswer(bodyRole, options())).message).toMatch(/for role site/);
    const leafRole = joined({}, { ous: ['bc-role:site'] });
    expect(failedCheck(() => verifyJoinAnswer(leafRole, options())).message).toMatch(/OU is not bc-role:node/);
    const twoRoles = joined({}, { ous: ['bc-role:node', 'bc-role:site'] });
    expect(failedCheck(() => verifyJoinAnswer(twoRoles, options())).check).toBe('role');
  });

  it('refuses a malformed body', () => {
    for (const [overrides, check] of [
      [{ certificateChain: [] }, 'body'],
      [{ status: 'admitted' }, 'body'],
      [{ nodeId: 7 }, 'body'],
      [{ certificateChain: ['not base64!'] }, 'body'],
      [{ certificateChain: ['AAAA'] }, 'key'],
    ] as const) {
      const envelope = joined(overrides);
      expect(failedCheck(() => verifyJoinAnswer(envelope, options())).check, JSON.stringify(overrides)).toBe(check);
    }
  });
});
