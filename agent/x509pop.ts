import { createHash, sign, type KeyObject } from 'node:crypto';
import type { HardwareClaims } from '../protocol/hardware-claims';
import { X509POP, X509POP_REJOIN_WINDOW_SECONDS, x509popProofMessage } from '../protocol/x509pop-wire';
import { writeIdentity } from './identity-store';
import { DEFAULT_BASE_PATH, type JoinTrust } from './join';
import { JoinRefusedError } from './join-refused';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from './keys';
import { loadNodeIdentity, type NodeLoadedIdentity, type TpmLoadedIdentity } from './renew/identity';
import { nextTpmKey } from './renew/tpm-renewal';
import { withTpm } from './tpm/identify';
import { encodeKeyBlob, loadKey, withStoragePrimary, type TpmKeyBlob } from './tpm/keys';
import { signWithTpmKey, type TpmKeyAttestationBody } from './tpm/renewal';
import { makeNodeKeyInTpm, type NodeKeyTpm } from './tpm/node-key';
import { nextKeyInHelperTpm, type NodeKeyHelper } from './helper/client';
import { loggedFetch } from './request-log';
import { verifyJoinAnswer, verifyJoinChallenge, type IssuedAnswer } from './verify-answer';

// The agent side of an x509pop re-join (protocol.md "x509pop re-joins"): a machine whose certificate expired
// while it was offline proves possession of its last key in a challenge round and gets a new certificate for
// a new key, keeping its node.

/** Whether a certificate that ended at `notAfter` may re-join with x509pop at `now` (the agent's clock). */
function isWithinRejoinWindow(notAfter: Date, now: Date = new Date()): boolean {
  const since = now.getTime() - notAfter.getTime();
  return since > 0 && since < X509POP_REJOIN_WINDOW_SECONDS * 1000;
}

/**
 * The body of either round: round two adds the nonce and the proof by the last key over (nonce, CSR hash),
 * made here with `lastKey` or given as `proof` (a TPM-held last key signs it in the TPM). `keyAttestation` (a
 * TPM-bound leaf's, in both rounds) is the AK's Certify of the new key.
 */
export function x509popBody(options: {
  leafDer: Buffer;
  keys: Pick<NodeKeyAndCsr, 'csrDer' | 'csrSha256'>;
  claims: HardwareClaims;
  role?: string;
  lastKey?: KeyObject;
  proof?: Buffer;
  nonce?: string;
  keyAttestation?: TpmKeyAttestationBody;
}): string {
  const attestation: Record<string, unknown> = { certificate: options.leafDer.toString('base64') };
  if (options.nonce) {
    if (!options.lastKey && !options.proof) throw new Error('round two needs the last key');
    attestation.nonce = options.nonce;
    attestation.proof = (
      options.proof ??
      sign('sha256', x509popProofMessage(options.nonce, options.keys.csrSha256), {
        key: options.lastKey!,
        dsaEncoding: 'ieee-p1363',
      })
    ).toString('base64url');
  }
  if (options.keyAttestation) attestation.keyAttestation = options.keyAttestation;
  return JSON.stringify({
    csr: options.keys.csrDer.toString('base64'),
    claims: options.claims,
    attestor: X509POP,
    role: options.role ?? 'node',
    attestation,
  });
}

/** The next key of an x509pop re-join: a software key, or for a TPM-held last key the TPM's next key. */
interface RejoinKeys {
  csrDer: Buffer;
  csrSha256: string;
  spkiDer: Buffer;
  /** `node.key`'s next text: the PKCS#8 PEM, or the TPM key blob. */
  keyText: string;
  keyAttestation?: TpmKeyAttestationBody;
}

/**
 * A TPM-held last key's re-join, before anything is sent: in one session with the TPM, the last key must load
 * (a cleared or replaced TPM fails here), then the next key, its CSR and, for a leaf naming an AK, that AK's
 * Certify of it (agent/renew/tpm-renewal.ts, as at renewal). Throws when the TPM is unavailable or is another.
 */
async function nextTpmRejoinKeys(last: TpmLoadedIdentity): Promise<RejoinKeys & { nodeKey: TpmKeyBlob }> {
  if (last.tpm.helper) {
    // Under [helper], bcd helper holds the TPM: it makes the next key (and an AK's Certify) there.
    const next = await last.tpm.helper.nextKey(last.tpm);
    return { ...next.csr, keyText: encodeKeyBlob(next.nodeKey), nodeKey: next.nodeKey, keyAttestation: next.keyAttestation };
  }
  return withTpm(last.tpm.address, async (tpm) => {
    await withStoragePrimary(tpm, async (srk) => tpm.flush(await loadKey(tpm, srk, last.tpm.nodeKey)));
    const next = await nextTpmKey(tpm, last.tpm);
    return { ...next.csr, keyText: encodeKeyBlob(next.nodeKey), nodeKey: next.nodeKey, keyAttestation: next.keyAttestation };
  });
}

/** Round two's proof by a TPM-held last key, signed in the TPM. */
const tpmProof = (last: TpmLoadedIdentity, nonce: string, csrSha256: string) =>
  last.tpm.helper
    ? last.tpm.helper.sign(last.tpm.nodeKey, 'x509pop', x509popProofMessage(nonce, csrSha256))
    : withTpm(last.tpm.address, (tpm) =>
        signWithTpmKey(tpm, last.tpm.nodeKey, createHash('sha256').update(x509popProofMessage(nonce, csrSha256)).digest()),
      );

async function post(url: string, body: string, doFetch: typeof fetch): Promise<unknown> {
  const response = await doFetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const text = await response.text();
  if (response.status !== 200) throw JoinRefusedError.of(response.status, text);
  return JSON.parse(text);
}

/**
 * Both rounds of an x509pop re-join with `last` (the expired identity): a new key and CSR, round one with
 * the last leaf, the signed challenge verified, round two with the proof, the answer verified in the
 * protocol's order. A TPM-held last key makes the next key in the TPM and signs the proof there, and a leaf
 * naming an AK sends that AK's Certify of the next key in both rounds: when the TPM cannot do that, this throws
 * before anything is sent. Writes nothing. A refusal is a JoinRefusedError.
 */
export async function sendX509popRejoin(options: {
  serverUrl: string;
  basePath?: string;
  trust: JoinTrust;
  last: NodeLoadedIdentity;
  claims: HardwareClaims;
  keys?: NodeKeyAndCsr;
  /** bcd's node-key TPM: a software last key's successor is made there when one opens (agent/tpm/node-key.ts). */
  nodeKeyTpm?: NodeKeyTpm;
  /** Under `[helper]`: a software last key's successor is made in the helper's TPM when it reports one. */
  helper?: NodeKeyHelper;
  fetch?: typeof fetch;
}): Promise<{ answer: IssuedAnswer; keys: RejoinKeys }> {
  const last = options.last;
  const moves = !options.keys && !last.tpm;
  const inTpm = !moves
    ? null
    : options.nodeKeyTpm
      ? await makeNodeKeyInTpm(options.nodeKeyTpm)
      : options.helper
        ? await nextKeyInHelperTpm(options.helper)
        : null;
  const software = options.keys ?? (last.tpm || inTpm ? null : generateNodeKeyAndCsr());
  const keys: RejoinKeys = software
    ? { ...software, keyText: software.privateKeyPem }
    : inTpm
      ? { ...inTpm, keyText: inTpm.privateKeyPem }
      : await nextTpmRejoinKeys(last as TpmLoadedIdentity);
  const doFetch = loggedFetch(options.fetch ?? fetch);
  const url = `${options.serverUrl}${options.basePath ?? DEFAULT_BASE_PATH}/v1/join`;
  const leafDer = Buffer.from(last.identity.certificateChain[0]!, 'base64');
  const role = last.identity.role;
  const base = { leafDer, keys, claims: options.claims, role, keyAttestation: keys.keyAttestation };
  const trust = {
    signingKeyPin: options.trust.signingKeyPin,
    signingCertificateDer: options.trust.signingCertificateDer,
    // The trust set's keys, when held: an answer signed by any of them (sig or sigs) verifies.
    ...(options.trust.signingKeys ? { signingKeys: options.trust.signingKeys } : {}),
    csrSha256: keys.csrSha256,
  };
  const challenge = verifyJoinChallenge((await post(url, x509popBody(base), doFetch)) as never, { ...trust, attestor: X509POP });
  const proof = last.tpm ? { proof: await tpmProof(last, challenge.nonce, keys.csrSha256) } : { lastKey: last.privateKey };
  const answered = await post(url, x509popBody({ ...base, ...proof, nonce: challenge.nonce }), doFetch);
  const answer = verifyJoinAnswer(answered as never, { ...trust, publicKeySpkiDer: keys.spkiDer, expectedRole: role });
  if (answer.status !== 'joined' || answer.nodeId !== last.identity.nodeId) throw new Error('the x509pop re-join answered another node');
  return { answer, keys };
}

/**
 * `bcd` and `better-compute agent run` on an identity whose certificate expired: when it expired less than
 * 7 days ago (by this machine's clock), re-join with x509pop and replace the identity in `identityDir` (the
 * old files renamed `<name>.reset-<time>`, as `--reset` does; a TPM-held identity keeps its `ak.key`). Returns
 * the new identity's answer, or null when the identity is not within the window (nothing was sent). A refusal
 * is a JoinRefusedError: the operator then re-joins with a token. `tpm` is the TPM of a TPM-held key
 * (`--tpm` / `BCD_TPM`; /dev/tpmrm0 when absent).
 */
export async function rejoinExpiredIdentity(options: {
  serverUrl: string;
  basePath?: string;
  trust: JoinTrust;
  identityDir: string;
  claims: HardwareClaims;
  tpm?: string;
  nodeKeyTpm?: NodeKeyTpm;
  /** Under `[helper]`: `bcd helper`, which holds the TPM (agent/helper). */
  helper?: NodeKeyHelper;
  now?: Date;
  fetch?: typeof fetch;
}): Promise<IssuedAnswer | null> {
  const last = await loadNodeIdentity(options.identityDir, {
    ...(options.tpm ? { tpm: options.tpm } : {}),
    ...(options.helper ? { helper: options.helper } : {}),
  });
  if (!isWithinRejoinWindow(last.notAfter, options.now)) return null;
  const { answer, keys } = await sendX509popRejoin({ ...options, last });
  await writeIdentity(
    options.identityDir,
    {
      privateKeyPem: keys.keyText,
      certificateChain: answer.certificateChain,
      nodeId: answer.nodeId,
      siteId: answer.siteId,
      trustDomain: answer.trustDomain,
      role: answer.role,
    },
    { reset: true, ...(last.tpm?.ak ? { akKey: encodeKeyBlob(last.tpm.ak) } : {}) },
  );
  return answer;
}

/**
 * Runs `run` (the session or renewal loop) with x509pop re-joins around it: an identity already expired when
 * the agent starts, or one that expires while it runs (the loop answers RENEWAL_EXIT.expired), is re-joined
 * with `rejoin` when it expired less than 7 days ago, and the loop starts again on the new identity. Outside
 * the window, or when the re-join is refused, the loop's own answer stands (it tells the operator to join
 * again with a token). One re-join per expiry: a second expiry right after one re-join is not retried.
 */
export async function runWithX509popRejoin(options: {
  identityDir: string;
  run: () => Promise<number>;
  rejoin: () => Promise<IssuedAnswer | null>;
  expiredExit: number;
  log: (line: string) => void;
}): Promise<number> {
  const tryRejoin = async (): Promise<boolean> => {
    try {
      const answer = await options.rejoin();
      if (!answer) return false;
      options.log(`agent: the certificate had expired; re-joined with x509pop as node ${answer.nodeId} (site ${answer.siteId})`);
      return true;
    } catch (error) {
      options.log(`agent: the x509pop re-join failed: ${(error as Error).message}`);
      return false;
    }
  };
  let last: NodeLoadedIdentity | null = null;
  try {
    last = await loadNodeIdentity(options.identityDir);
  } catch {
    // The loop reports an identity that does not load.
  }
  if (last && Date.now() >= last.notAfter.getTime()) await tryRejoin();
  const code = await options.run();
  if (code !== options.expiredExit || !(await tryRejoin())) return code;
  return options.run();
}
