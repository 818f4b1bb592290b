import { sign, X509Certificate } from 'node:crypto';
import { readLeafNames } from '../../protocol/certificate-names';
import type { NodeIdentity } from '../identity-store';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../keys';
import { DEFAULT_BASE_PATH, type JoinKeys } from '../join';
import { makeNodeKeyInTpm, type NodeKeyTpm } from '../tpm/node-key';
import { renewPopMessage } from '../../protocol/renew-wire';
import { postToGateway, type GatewayTarget } from './gateway-client';
import type { LoadedIdentity, NodeLoadedIdentity, TpmLoadedIdentity } from './identity';
import { clientIdentityOf, prepareTpmRenewalParts, renewedTpmIdentity } from './tpm-renewal';
import { verifyTrustedEnvelope } from '../trust/envelope';
import { nextKeyInHelperTpm, type NodeKeyHelper } from '../helper/client';
import type { TrustStore } from '../trust/store';
import { AgentError, agentErrorClass } from '../errors';

/** The gateway answered the uniform refusal: the identity may be revoked, expired, or the proof stale. */
export class RenewRefusedError extends AgentError {
  constructor() {
    super('REFUSED', 'Renew refused');
    this.name = 'RenewRefusedError';
  }
}

/** Any other answer that is not a renewal (5xx while the API restarts, a malformed answer): retry later. */
class RenewRetryableError extends agentErrorClass('UNAVAILABLE', 'RenewRetryableError') {}

/** The Renew body, signed by the current key (protocol.md "Renew"). */
export function buildRenewBody(current: LoadedIdentity, csrDer: Buffer, csrSha256: string, clientTime: number): string {
  const popSig = sign('sha256', renewPopMessage(csrSha256, current.identity.nodeId, clientTime), {
    key: current.privateKey,
    dsaEncoding: 'ieee-p1363',
  });
  return renewBodyJson({ chain: current.identity.certificateChain, csrDer, clientTime, popSig });
}

/**
 * The Renew body's bytes from its parts: the current chain (leaf and node CA are sent), the new CSR, the proof
 * (`popSig`, IEEE P1363 r||s over renewPopMessage, made by whatever holds the current key) and, for a leaf
 * that names a TPM AK, the key attestation (docs/tpm-attestation.md); `{}` otherwise.
 */
export function renewBodyJson(input: {
  chain: readonly string[];
  csrDer: Buffer;
  clientTime: number;
  popSig: Buffer;
  keyAttestation?: object;
}): string {
  return JSON.stringify({
    csr: input.csrDer.toString('base64'),
    chain: [input.chain[0], input.chain[input.chain.length - 1]],
    clientTime: input.clientTime,
    popSig: input.popSig.toString('base64url'),
    keyAttestation: input.keyAttestation ?? {},
  });
}

/** A renewal answer, checked: the new chain and leaf, its node CA, and the answer's `trust` when it was signed. */
interface CheckedRenewal {
  chain: string[];
  leaf: X509Certificate;
  nodeCa: X509Certificate;
  /** The body's `trust` and bundle, only when the envelope verified under a trusted signing key. */
  signed: { trust: unknown; commandTrustBundle?: string[] } | null;
}

const isB64Strings = (value: unknown): value is string[] => Array.isArray(value) && value.every((c) => typeof c === 'string');

/**
 * Checks a renewal answer without trusting the gateway. When the agent knows trusted join-signing keys
 * (`trust`), the envelope must verify under one of them (`sig`, or a `sigs` entry of a trusted pin) before the
 * body is read. The new leaf must then verify under the node CA the agent already holds or, in a signed answer,
 * under the CA the answer's chain ends with (a node CA rotation: the signature vouches for it), certify the new
 * key, carry the same SPIFFE ID first and only `urn:bc:` statements after it, and the same single role. The
 * envelope's body is read as the join answer body.
 */
export function checkRenewedAnswer(
  current: NodeLoadedIdentity,
  answer: Buffer,
  newSpkiDer: Buffer,
  csrSha256: string,
  trust?: TrustStore,
): CheckedRenewal {
  let envelope: unknown;
  let body: {
    status?: unknown;
    csrSha256?: unknown;
    certificateChain?: unknown;
    nodeId?: unknown;
    trust?: unknown;
    commandTrustBundle?: unknown;
  };
  let signed = false;
  try {
    envelope = JSON.parse(answer.toString('utf8'));
  } catch {
    throw new RenewRetryableError('the renewal answer is malformed');
  }
  const keys = trust?.signingKeys();
  if (keys && keys.size > 0) {
    try {
      body = verifyTrustedEnvelope(envelope, keys) as typeof body;
      signed = true;
    } catch (error) {
      throw new RenewRetryableError(`the renewal answer does not verify: ${(error as Error).message}`);
    }
  } else {
    try {
      body = JSON.parse(Buffer.from(String((envelope as { body?: unknown })?.body), 'base64url').toString('utf8'));
    } catch {
      throw new RenewRetryableError('the renewal answer is malformed');
    }
  }
  body = typeof body === 'object' && body !== null ? body : {};
  const chain = body.certificateChain;
  if (
    body.status !== 'renewed' ||
    body.csrSha256 !== csrSha256 ||
    body.nodeId !== current.identity.nodeId ||
    !Array.isArray(chain) ||
    chain.length < 2 ||
    !chain.every((c) => typeof c === 'string')
  ) {
    throw new RenewRetryableError('the renewal answer is not a renewal of this request');
  }
  const leafDer = Buffer.from(chain[0] as string, 'base64');
  const leaf = new X509Certificate(leafDer);
  let nodeCa = current.nodeCa;
  if (!leaf.verify(current.nodeCa.publicKey)) {
    // Issued by another node CA (a rotation): only a signed answer may introduce it.
    const issuer = signed ? new X509Certificate(Buffer.from(chain[chain.length - 1] as string, 'base64')) : null;
    if (!issuer?.ca || !leaf.checkIssued(issuer) || !leaf.verify(issuer.publicKey))
      throw new RenewRetryableError('the renewed certificate is not signed by the node CA');
    nodeCa = issuer;
  }
  const names = readLeafNames(leafDer);
  if (!names.spkiDer.equals(newSpkiDer)) throw new RenewRetryableError('the renewed certificate does not certify the new key');
  if (names.uris[0] !== current.spiffeId || names.uris.slice(1).some((u) => !u.startsWith('urn:bc:'))) {
    throw new RenewRetryableError('the renewed certificate names another identity');
  }
  if (names.organizationalUnits.filter((ou) => ou.startsWith('bc-role:')).join() !== `bc-role:${current.identity.role}`) {
    throw new RenewRetryableError('the renewed certificate carries another role');
  }
  return {
    chain: chain as string[],
    leaf,
    nodeCa,
    signed: signed
      ? { trust: body.trust, ...(isB64Strings(body.commandTrustBundle) ? { commandTrustBundle: body.commandTrustBundle } : {}) }
      : null,
  };
}

/** Stores a signed renewal answer's `trust` (protocol.md "Answers": as a `trust` event would be). */
async function applyAnswerTrust(checked: CheckedRenewal, trust: TrustStore | undefined): Promise<void> {
  if (!trust || !checked.signed || checked.signed.trust === undefined) return;
  await trust.acceptAnswerTrust(checked.signed.trust, checked.signed, 'renewal answer');
}

type PostRenew = (pathname: string, body: string) => Promise<{ status: number; body: Buffer }>;

/**
 * Where a renewal goes, and for bcd where node keys live: `nodeKeyTpm`, or under `[helper]` the helper's TPM
 * (`helper`). A software identity then makes its next key in that TPM when one opens. `log` hears why a TPM
 * could not be used (a default device that fails, a helper on a host without a TPM).
 */
type RenewTarget = GatewayTarget & { basePath?: string; nodeKeyTpm?: NodeKeyTpm; helper?: NodeKeyHelper; log?: (line: string) => void };

/** Sends a Renew body: on a session's HTTP/2 connection when one is given (no new TLS handshake), else on its own. */
async function sendRenew(current: NodeLoadedIdentity, target: RenewTarget, body: string, post?: PostRenew) {
  const pathname = `${target.basePath ?? DEFAULT_BASE_PATH}/v1/renew`;
  const answer = post ? await post(pathname, body) : await postToGateway(target, clientIdentityOf(current), pathname, body);
  if (answer.status === 403) throw new RenewRefusedError();
  if (answer.status !== 200) throw new RenewRetryableError(`the gateway answered ${answer.status}`);
  return answer;
}

/**
 * A renewal of a TPM-held key: the next key, its attestation and the proof are all made in the TPM first
 * (prepareTpmRenewalParts throws, and nothing is sent, when the TPM is unavailable or its AK is not the leaf's),
 * then sent with mutual TLS whose CertificateVerify the TPM signs.
 */
async function renewTpmIdentity(
  current: TpmLoadedIdentity,
  target: RenewTarget,
  now: () => number,
  post?: PostRenew,
): Promise<TpmLoadedIdentity> {
  const parts = await prepareTpmRenewalParts(current, now);
  const body = renewBodyJson({
    chain: current.identity.certificateChain,
    csrDer: parts.csr.csrDer,
    clientTime: parts.clientTime,
    popSig: parts.popSig,
    keyAttestation: parts.keyAttestation,
  });
  const answer = await sendRenew(current, target, body, post);
  const checked = checkRenewedAnswer(current, answer.body, parts.csr.spkiDer, parts.csr.csrSha256, target.trust);
  await applyAnswerTrust(checked, target.trust);
  return { ...renewedTpmIdentity(current, parts, checked), nodeCa: checked.nodeCa };
}

/**
 * One renewal through the gateway: a new P-256 key and CSR (`next`, made now unless given), the proof by the
 * current key made now, mutual TLS with the current certificate, and the answer checked. Returns the new
 * identity, loaded (its key and leaf already parsed and checked, so it can renew in turn); writes nothing.
 * A TPM-held identity renews through its TPM instead (`next` is then ignored: the TPM makes the next key), and
 * with `target.nodeKeyTpm` a software identity's next key is made in that TPM when one opens (it then comes back
 * TPM-held, proved by the software key's signature only).
 *
 * @throws RenewRefusedError on the uniform 403; RenewRetryableError (or a network error) otherwise; for a
 *   TPM-held key, TpmRenewalError or TpmError before anything is sent.
 */
export async function renewIdentity(
  current: LoadedIdentity,
  target: RenewTarget & { nodeKeyTpm?: undefined; helper?: undefined },
  now?: () => number,
  next?: NodeKeyAndCsr,
  post?: PostRenew,
): Promise<LoadedIdentity>;
export async function renewIdentity(
  current: NodeLoadedIdentity,
  target: RenewTarget,
  now?: () => number,
  next?: NodeKeyAndCsr,
  post?: PostRenew,
): Promise<NodeLoadedIdentity>;
export async function renewIdentity(
  current: NodeLoadedIdentity,
  target: RenewTarget,
  now: () => number = Date.now,
  nextKey?: NodeKeyAndCsr,
  post?: PostRenew,
): Promise<NodeLoadedIdentity> {
  if (current.tpm) return renewTpmIdentity(current, target, now, post);
  // A software identity's next key moves into the TPM once one opens (bcd's node-key TPM rule); under [helper],
  // into the helper's once it reports one.
  const inTpm = nextKey
    ? null
    : target.nodeKeyTpm
      ? await makeNodeKeyInTpm(target.nodeKeyTpm, target.log)
      : target.helper
        ? await nextKeyInHelperTpm(target.helper, target.log)
        : null;
  const next: JoinKeys = nextKey ?? inTpm ?? generateNodeKeyAndCsr();
  const body = buildRenewBody(current, next.csrDer, next.csrSha256, Math.floor(now() / 1000));
  const answer = await sendRenew(current, target, body, post);
  const checked = checkRenewedAnswer(current, answer.body, next.spkiDer, next.csrSha256, target.trust);
  await applyAnswerTrust(checked, target.trust);
  const { chain, leaf } = checked;
  const renewed = {
    leaf,
    nodeCa: checked.nodeCa,
    notBefore: new Date(leaf.validFrom),
    notAfter: new Date(leaf.validTo),
    spiffeId: current.spiffeId,
  };
  if (inTpm) {
    const tpm = {
      nodeKey: inTpm.nodeKey,
      ak: null,
      akStatement: null,
      ...(target.nodeKeyTpm?.address ? { address: target.nodeKeyTpm.address } : {}),
      // Made by the helper: it signs for this key from now on.
      ...(!target.nodeKeyTpm && target.helper ? { helper: target.helper } : {}),
    };
    return {
      ...renewed,
      identity: { ...current.identity, privateKeyPem: inTpm.privateKeyPem, certificateChain: chain },
      privateKey: null,
      tpm,
    };
  }
  const software = next as NodeKeyAndCsr;
  return {
    ...renewed,
    // A getter: the PEM is encoded when first read (to be stored, or presented on the next renewal).
    identity: {
      ...current.identity,
      get privateKeyPem() {
        return software.privateKeyPem;
      },
      certificateChain: chain,
    },
    privateKey: software.privateKey,
  };
}

/** {@link renewIdentity}, answering the new identity's record (what the agent stores). */
export async function renewOnce(current: NodeLoadedIdentity, target: RenewTarget, now: () => number = Date.now): Promise<NodeIdentity> {
  const renewed = await renewIdentity(current, target, now);
  return { ...renewed.identity, privateKeyPem: renewed.identity.privateKeyPem };
}
