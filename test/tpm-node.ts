import { writeIdentity } from '../agent/identity-store';
import { generateNodeKeyAndCsr } from '../agent/keys';
import { withTpm } from '../agent/tpm/identify';
import { createAttestationKey, createNodeKey, encodeKeyBlob, withStoragePrimary, type TpmKeyBlob } from '../agent/tpm/keys';
import { p256SpkiOf } from '../agent/tpm/public-area';
import { akStatementOfName } from '../agent/tpm/renewal';
import { testDb } from './db';
import { createTestTenant } from './fixtures';
import { mintToken } from './join-harness';
import { createRenewHarness, issueRecordedCertificate, joinThroughGateway, type RenewHarness } from './renew-harness';
import { startSwtpm, type Swtpm } from './swtpm';

/** An AK made in the TPM at `address` (`swtpm:HOST:PORT`), and the statement a certified `tpm` join writes for it. */
export const makeAk = (address: string) =>
  withTpm(address, (tpm) =>
    withStoragePrimary(tpm, async (srk): Promise<[TpmKeyBlob, string]> => {
      const blob = await createAttestationKey(tpm, srk);
      const { handle, name } = await tpm.load(srk, blob.privateBlob, blob.publicArea);
      await tpm.flush(handle);
      return [blob, akStatementOfName(name)];
    }),
  );

/** A renew harness and two swtpm TPMs, A and B, each with an AK: two machines, each its own TPM. */
export interface TwoTpms {
  r: RenewHarness;
  swtpmA: Swtpm;
  swtpmB: Swtpm;
  akA: TpmKeyBlob;
  statementA: string;
  akB: TpmKeyBlob;
  statementB: string;
  /** Stops both TPMs, then the harness. */
  stop(): Promise<void>;
}

export async function startTwoTpms(): Promise<TwoTpms> {
  const r = await createRenewHarness();
  const [swtpmA, swtpmB] = await Promise.all([startSwtpm(), startSwtpm()]);
  const [akA, statementA] = await makeAk(swtpmA.address);
  const [akB, statementB] = await makeAk(swtpmB.address);
  return {
    r,
    swtpmA,
    swtpmB,
    akA,
    statementA,
    akB,
    statementB,
    stop: async () => {
      await Promise.all([swtpmA.stop(), swtpmB.stop()]);
      await r.close();
    },
  };
}

/** The reasons of the `security.renew.refused` events that name `nodeId`, oldest first. */
export async function renewRefusalReasons(tenantId: string, nodeId: string): Promise<string[]> {
  const events = await testDb().event.findMany({ where: { tenantId, type: 'security.renew.refused' }, orderBy: { id: 'asc' } });
  return events
    .map((e) => e.data as { reason: string; nodeId: string | null })
    .filter((d) => d.nodeId === nodeId)
    .map((d) => d.reason);
}

/**
 * A bcd data directory of a TPM-bound node: joined through the gateway with a token, then its certificate replaced
 * by one for a key made in the TPM at `address` that names `ak` (what an admitted `tpm` join writes: issued by the
 * node CA and recorded in node_certs), `node.key` that key's blob and `ak.key` the AK's. The certificate starts a
 * minute ago and lasts an hour unless `validity` says otherwise.
 */
export async function tpmBoundNode(
  r: RenewHarness,
  address: string,
  ak: { blob: TpmKeyBlob; statement: string },
  dir?: string,
  validity: { notBefore: Date; ttlSeconds: number } = { notBefore: new Date(Date.now() - 60_000), ttlSeconds: 3600 },
) {
  const t = await createTestTenant(testDb());
  const joined = await joinThroughGateway(r, (await mintToken(t)).token!);
  const { answer } = joined;
  const key = await withTpm(address, (tpm) => withStoragePrimary(tpm, (srk) => createNodeKey(tpm, srk)));
  const cert = await issueRecordedCertificate(r, answer, p256SpkiOf(key.publicArea), validity, [ak.statement]);
  const identityDir = dir ?? joined.dir;
  await writeIdentity(
    identityDir,
    {
      privateKeyPem: encodeKeyBlob(key),
      certificateChain: [cert.der.toString('base64'), answer.certificateChain[1]!],
      nodeId: answer.nodeId,
      siteId: answer.siteId,
      trustDomain: answer.trustDomain,
      role: 'node',
    },
    { reset: true, akKey: encodeKeyBlob(ak.blob) },
  );
  return { dir: identityDir, tenantId: t.tenantId, nodeId: answer.nodeId, siteId: answer.siteId, key };
}

/**
 * A bcd data directory (`dir`) of a node whose key is in software (a PKCS#8 node.key): joined through the gateway
 * with a token, then given a new software key and a certificate for it with `validity` (an expired one, say).
 */
export async function softwareNode(r: RenewHarness, dir: string, validity: { notBefore: Date; ttlSeconds: number }) {
  const t = await createTestTenant(testDb());
  const { answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
  const keys = generateNodeKeyAndCsr();
  const cert = await issueRecordedCertificate(r, answer, keys.spkiDer, validity);
  await writeIdentity(dir, {
    privateKeyPem: keys.privateKeyPem,
    certificateChain: [cert.der.toString('base64'), answer.certificateChain[1]!],
    nodeId: answer.nodeId,
    siteId: answer.siteId,
    trustDomain: answer.trustDomain,
    role: 'node',
  });
  return { dir, tenantId: t.tenantId, nodeId: answer.nodeId, siteId: answer.siteId };
}
