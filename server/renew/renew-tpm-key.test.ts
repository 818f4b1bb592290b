import { createHash, createPrivateKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLeafNames } from '../../protocol/certificate-names';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { renewBodyJson } from '../../agent/renew/renew';
import { TpmClient, TpmError } from '../../agent/tpm/client';
import { OBJECT } from '../../protocol/tpm/constants';
import { createTpmCsr } from '../../agent/tpm/csr';
import { createAttestationKey, createNodeKey, loadKey, withStoragePrimary, type TpmKeyBlob } from '../../agent/tpm/keys';
import { p256SpkiOf } from '../../agent/tpm/public-area';
import { akStatementOfName, prepareTpmRenewal, signWithTpmKey, TpmRenewalError, type TpmKeyAttestationBody } from '../../agent/tpm/renewal';
import { attestationKeyTemplate } from '../../agent/tpm/templates';
import { parseTpmAddress } from '../../agent/tpm/transport';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { mintToken } from '../../test/join-harness';
import { BASE, createRenewHarness, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { startSwtpm, type Swtpm } from '../../test/swtpm';
import { renewRefusalReasons as reasons } from '../../test/tpm-node';
import { issueNodeCertificate } from '../pki/issuance/node-certificate';
import { vouchHeaders, PEER_HEADER, VOUCH_HEADER } from '../vouching/vouch';
import { renewPopMessage } from '../../protocol/renew-wire';

const PATH = `${BASE}/v1/renew`;
const REFUSED = '{"code":"ACCESS_DENIED","message":"Renew refused"}';
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest();
const derOfPem = (pem: string) => pem.replace(/-----[^-]+-----|\s/g, '');

let r: RenewHarness;
let swtpmA: Swtpm;
let swtpmB: Swtpm;
let tpmA: TpmClient;
let tpmB: TpmClient;
let akA: TpmKeyBlob;
let akB: TpmKeyBlob;
let statementA: string;
let statementB: string;

/** The AK's blob and the statement a certified `tpm` join writes for it (from the Name the TPM itself reports). */
async function makeAk(tpm: TpmClient): Promise<[TpmKeyBlob, string]> {
  return withStoragePrimary(tpm, async (srk) => {
    const blob = await createAttestationKey(tpm, srk);
    const { handle, name } = await tpm.load(srk, blob.privateBlob, blob.publicArea);
    await tpm.flush(handle);
    return [blob, akStatementOfName(name)];
  });
}

beforeAll(async () => {
  r = await createRenewHarness();
  [swtpmA, swtpmB] = await Promise.all([startSwtpm(), startSwtpm()]);
  tpmA = await TpmClient.open(parseTpmAddress(swtpmA.address));
  tpmB = await TpmClient.open(parseTpmAddress(swtpmB.address));
  [akA, statementA] = await makeAk(tpmA);
  [akB, statementB] = await makeAk(tpmB);
});

afterAll(async () => {
  await tpmA?.close();
  await tpmB?.close();
  await Promise.all([swtpmA?.stop(), swtpmB?.stop()]);
  await r?.close();
});

/** A TPM-bound identity: the node's current certificate certifies a key held in TPM A and names AK A. */
interface TpmIdentity {
  tenantId: string;
  nodeId: string;
  siteId: string;
  chain: string[];
  key: TpmKeyBlob;
}

/**
 * A node joined with a token, whose current certificate is then replaced by one for a key in TPM A carrying AK
 * A's statement: what an admitted `tpm` join writes (issued by the node CA and recorded in node_certs).
 */
async function tpmBoundNode(): Promise<TpmIdentity> {
  const t = await createTestTenant(testDb());
  const { answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
  const key = await withStoragePrimary(tpmA, (srk) => createNodeKey(tpmA, srk));
  const spki = p256SpkiOf(key.publicArea);
  const cert = issueNodeCertificate(r.h.crypto.nodeCa, {
    publicKeySpkiDer: spki,
    trustDomain: r.h.crypto.trustDomain,
    siteId: answer.siteId,
    nodeId: answer.nodeId,
    role: 'node',
    notBefore: new Date(Date.now() - 60_000),
    ttlSeconds: 3600,
    extraUris: [statementA],
  });
  await testDb().nodeCert.create({
    data: {
      serial: cert.serialHex,
      nodeId: answer.nodeId,
      identityGeneration: 1,
      role: 'node',
      spkiSha256: new Uint8Array(sha256(spki)),
      der: new Uint8Array(cert.der),
      notBefore: cert.notBefore,
      notAfter: cert.notAfter,
    },
  });
  return {
    tenantId: t.tenantId,
    nodeId: answer.nodeId,
    siteId: answer.siteId,
    chain: [cert.der.toString('base64'), answer.certificateChain[1]!],
    key,
  };
}

/**
 * Sends a renewal as the gateway relays it (vouching for the peer certificate, the current leaf) straight to
 * RenewService: the proof is signed in TPM A by the current key, as bcd signs it.
 */
async function renew(id: TpmIdentity, csrDer: Buffer, keyAttestation?: TpmKeyAttestationBody | object) {
  const clientTime = Math.floor(Date.now() / 1000);
  const message = renewPopMessage(sha256(csrDer).toString('hex'), id.nodeId, clientTime);
  const popSig = await signWithTpmKey(tpmA, id.key, sha256(message));
  const body = Buffer.from(renewBodyJson({ chain: id.chain, csrDer, clientTime, popSig, keyAttestation }));
  const voucher = {
    key: createPrivateKey(r.gatewayCert.privateKeyPem),
    chainB64: [derOfPem(r.gatewayCert.certificatePem), derOfPem(r.h.bundle.servingCa.certificatePem)] as [string, string],
  };
  const headers = vouchHeaders(voucher, Buffer.from(id.chain[0]!, 'base64'), body, PATH);
  return r.renew.renew({ body, vouch: headers[VOUCH_HEADER], peer: headers[PEER_HEADER], path: PATH });
}

function expectRefused(answer: { status: number; body: Buffer }) {
  expect(answer.status).toBe(403);
  expect(answer.body.toString()).toBe(REFUSED);
}

describe('renewal of a TPM-held key (a leaf naming urn:bc:tpm-ak:)', () => {
  it('renews with the same AK certifying the new key over sha256(csr), and the statement carries over', async () => {
    const id = await tpmBoundNode();
    const next = await prepareTpmRenewal(tpmA, { ak: akA, akStatement: statementA });
    const answer = await renew(id, next.csr.csrDer, next.keyAttestation);
    expect(answer.status, answer.body.toString()).toBe(200);
    const body = JSON.parse(Buffer.from(JSON.parse(answer.body.toString()).body, 'base64url').toString());
    expect(body).toMatchObject({ status: 'renewed', nodeId: id.nodeId, csrSha256: next.csr.csrSha256 });
    const leaf = readLeafNames(Buffer.from(body.certificateChain[0], 'base64'));
    expect(leaf.spkiDer.equals(next.csr.spkiDer)).toBe(true);
    expect(leaf.uris).toEqual([`spiffe://${r.h.crypto.trustDomain}/site/${id.siteId}/node/${id.nodeId}`, statementA]);

    // The renewed identity renews in turn, again only with an attestation.
    const renewed = { ...id, chain: body.certificateChain as string[], key: next.nodeKey };
    const third = await prepareTpmRenewal(tpmA, { ak: akA, akStatement: statementA });
    expect((await renew(renewed, third.csr.csrDer, third.keyAttestation)).status).toBe(200);
    expectRefused(await renew(renewed, (await prepareTpmRenewal(tpmA, { ak: akA, akStatement: statementA })).csr.csrDer));
    expect(await reasons(id.tenantId, id.nodeId)).toEqual(['key-attestation-missing']);
  });

  it('is refused without keyAttestation, never downgraded to a proof of possession', async () => {
    const id = await tpmBoundNode();
    const next = await prepareTpmRenewal(tpmA, { ak: akA, akStatement: statementA });
    expectRefused(await renew(id, next.csr.csrDer));
    expectRefused(await renew(id, generateNodeKeyAndCsr().csrDer, {}));
    expect(await reasons(id.tenantId, id.nodeId)).toEqual(['key-attestation-missing', 'key-attestation-missing']);
  });

  it('another TPM: bcd refuses to build it, and an attestation by another AK is refused (key-attestation-ak)', async () => {
    const id = await tpmBoundNode();
    // bcd's side: the AK blob does not load in another TPM, and another TPM's AK is not the leaf's.
    await expect(prepareTpmRenewal(tpmB, { ak: akA, akStatement: statementA })).rejects.toBeInstanceOf(TpmError);
    await expect(prepareTpmRenewal(tpmB, { ak: akB, akStatement: statementA })).rejects.toBeInstanceOf(TpmRenewalError);
    // Sent anyway: TPM B's AK certifies TPM B's key, correctly, and is still not the AK the leaf names.
    const other = await prepareTpmRenewal(tpmB, { ak: akB, akStatement: statementB });
    expectRefused(await renew(id, other.csr.csrDer, other.keyAttestation));
    // AK A's public area beside TPM B's certify: the Name matches, the signature does not.
    expectRefused(await renew(id, other.csr.csrDer, { ...other.keyAttestation, akPublic: akA.publicArea.toString('base64') }));
    expect(await reasons(id.tenantId, id.nodeId)).toEqual(['key-attestation-ak', 'key-attestation-signature']);
  });

  it('an attestation of another key, for another CSR, or of a restricted key is refused with its reason', async () => {
    const id = await tpmBoundNode();
    const made = await prepareTpmRenewal(tpmA, { ak: akA, akStatement: statementA });
    // A software key's CSR with the TPM key's attestation.
    expectRefused(await renew(id, generateNodeKeyAndCsr().csrDer, made.keyAttestation));
    // The same TPM key in another CSR: the Certify was over the first CSR's hash.
    const otherCsr = await withStoragePrimary(tpmA, async (srk) => {
      const handle = await loadKey(tpmA, srk, made.nodeKey);
      try {
        return await createTpmCsr(tpmA, handle, made.nodeKey.publicArea, { commonName: 'another request' });
      } finally {
        await tpmA.flush(handle);
      }
    });
    expectRefused(await renew(id, otherCsr.csrDer, made.keyAttestation));
    // A restricted key (an AK) certified over this CSR's hash stands as the node key.
    const software = generateNodeKeyAndCsr();
    const restricted = await withStoragePrimary(tpmA, (srk) => tpmA.create(srk, attestationKeyTemplate()));
    expect(new DataView(restricted.publicArea.buffer, restricted.publicArea.byteOffset).getUint32(4) & OBJECT.restricted).toBeTruthy();
    const certified = await withStoragePrimary(tpmA, async (srk) => {
      const akHandle = await loadKey(tpmA, srk, akA);
      const keyHandle = await loadKey(tpmA, srk, restricted);
      try {
        return await tpmA.certify(keyHandle, akHandle, sha256(software.csrDer));
      } finally {
        await tpmA.flush(keyHandle);
        await tpmA.flush(akHandle);
      }
    });
    expectRefused(
      await renew(id, software.csrDer, {
        akPublic: akA.publicArea.toString('base64'),
        nodeKeyPublic: restricted.publicArea.toString('base64'),
        certifyInfo: certified.attest.toString('base64'),
        certifySignature: certified.signature.toString('base64'),
      }),
    );
    // Not base64 at all.
    expectRefused(await renew(id, software.csrDer, { ...made.keyAttestation, certifyInfo: 'not base64!' }));
    expect(await reasons(id.tenantId, id.nodeId)).toEqual([
      'node-key-csr',
      'key-attestation-qualifying-data',
      'node-key-restricted',
      'key-attestation-malformed',
    ]);
  });
});
