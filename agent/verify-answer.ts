import { createHash, X509Certificate, type KeyObject } from 'node:crypto';
import type { SignedEnvelope } from '../protocol/envelope';
import { verifyTrustedEnvelope } from './trust/envelope';
import { spkiPin } from '../protocol/pins';
import { readLeafNames } from '../protocol/certificate-names';
import { AgentError } from './errors';

/** Which check of a join answer failed, in the order they run. */
export type JoinAnswerCheck = 'signature' | 'csr' | 'body' | 'key' | 'san' | 'role';

/** A join answer the agent must not use; `check` names the failed step. */
export class JoinAnswerError extends AgentError {
  readonly check: JoinAnswerCheck;
  constructor(check: JoinAnswerCheck, message: string) {
    super('TRUST', message);
    this.name = 'JoinAnswerError';
    this.check = check;
  }
}

/** An admitted join (or renewal), after every check passed. Certificates stay in their wire form (b64 DER). */
export interface IssuedAnswer {
  readonly status: 'joined' | 'renewed';
  readonly nodeId: string;
  readonly siteId: string;
  readonly trustDomain: string;
  readonly role: string;
  readonly csrSha256: string;
  readonly certificateChain: string[];
  readonly commandTrustBundle: string[];
  /** The body's `trust` (protocol.md "Answers"), unchecked: the trust store parses it. */
  readonly trust?: unknown;
}

/** A deferred join: retry the same call, with the same CSR, after `retryAfterSeconds`. */
export interface PendingAnswer {
  readonly status: 'pending';
  readonly requestId: string;
  readonly retryAfterSeconds: number;
  readonly csrSha256: string;
}

/**
 * Round one of a challenge round (protocol.md "Challenge rounds"): answer it by sending the same request with
 * the nonce (and what the attestor asks) in `attestation`, before `expiresAt`.
 */
interface ChallengeAnswer {
  readonly status: 'challenge';
  readonly attestor: string;
  readonly nonce: string;
  readonly expiresAt: number;
  readonly csrSha256: string;
  readonly challenge?: Record<string, unknown>;
}

/** What the agent knows independently of the answer. */
interface VerifyJoinAnswerOptions {
  /** `join_signing_key_pin`: the pin of the join-signing key's SPKI. */
  readonly signingKeyPin: string;
  /** `join.signingCertificate` of the well-known document, DER. Its key must match the pin. */
  readonly signingCertificateDer?: Uint8Array;
  /** Alternatively the signing public key itself (also checked against the pin). */
  readonly signingPublicKey?: KeyObject;
  /**
   * The trust set's signing keys by pin: when given (not empty), the answer verifies under any of them, `sig`
   * or a `sigs` entry of one of their pins, and the pin and certificate above are not used.
   */
  readonly signingKeys?: ReadonlyMap<string, KeyObject>;
  /** Hash of the CSR this agent sent. */
  readonly csrSha256: string;
  /** DER SPKI of the key the CSR asked to certify. */
  readonly publicKeySpkiDer: Uint8Array;
  /** The trust domain the agent expects; when absent the body's is used. */
  readonly trustDomain?: string;
  readonly expectedRole: string;
}

const B64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const isString = (value: unknown): value is string => typeof value === 'string' && value.length > 0;
const isB64List = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((item) => typeof item === 'string' && item.length > 0 && B64.test(item));

// Signing keys whose pin already checked out, by certificate hash or key object: every simulated agent in a
// process verifies against the same certificate, and exporting a key's SPKI costs about 100 µs.
const pinnedByCertificate = new Map<string, KeyObject>();
const pinnedKeys = new WeakMap<KeyObject, string>();

type SigningOptions = Pick<VerifyJoinAnswerOptions, 'signingKeyPin' | 'signingCertificateDer' | 'signingPublicKey' | 'signingKeys'>;

/**
 * The envelope's body, verified under the trusted keys: `signingKeys`, or the one key of the pin. Either way a
 * `sigs` entry of a trusted pin counts (protocol.md "Answers": during a signing-key rotation `sig` may be a key
 * this agent does not pin yet).
 */
function verifiedBody(envelope: SignedEnvelope, options: SigningOptions): unknown {
  const keys = options.signingKeys?.size ? options.signingKeys : new Map([[options.signingKeyPin, signingKey(options)]]);
  return verifyTrustedEnvelope(envelope, keys);
}

/** Checks 1 and 2 of every answer: signed under a trusted key, and made for this agent's CSR. Answers the body. */
function checkedBody(envelope: SignedEnvelope, options: SigningOptions & { csrSha256: string }): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = verifiedBody(envelope, options);
  } catch (error) {
    if (error instanceof JoinAnswerError) throw error;
    throw new JoinAnswerError('signature', 'The join answer is not signed by the pinned join signing key');
  }
  const body = (typeof parsed === 'object' && parsed !== null ? parsed : {}) as Record<string, unknown>;
  if (body.csrSha256 !== options.csrSha256) throw new JoinAnswerError('csr', "The join answer was made for another CSR than this agent's");
  return body;
}

function signingKey(options: SigningOptions): KeyObject {
  if (options.signingPublicKey) {
    const key = options.signingPublicKey;
    let pin = pinnedKeys.get(key);
    if (pin === undefined) pinnedKeys.set(key, (pin = spkiPin(key)));
    if (pin !== options.signingKeyPin) {
      throw new JoinAnswerError('signature', 'The join signing key does not match join_signing_key_pin');
    }
    return key;
  }
  if (!options.signingCertificateDer) throw new JoinAnswerError('signature', 'No join signing certificate to verify the answer with');
  const cacheKey = `${options.signingKeyPin}|${createHash('sha256').update(options.signingCertificateDer).digest('base64')}`;
  const cached = pinnedByCertificate.get(cacheKey);
  if (cached) return cached;
  let key: KeyObject;
  try {
    key = new X509Certificate(options.signingCertificateDer).publicKey;
  } catch {
    throw new JoinAnswerError('signature', 'The join signing certificate cannot be parsed');
  }
  if (spkiPin(key) !== options.signingKeyPin) {
    throw new JoinAnswerError('signature', 'The join signing certificate does not match join_signing_key_pin');
  }
  if (pinnedByCertificate.size >= 16) pinnedByCertificate.clear();
  pinnedByCertificate.set(cacheKey, key);
  return key;
}

/**
 * Verifies a join answer in the order the protocol fixes, reading nothing before the signature verified:
 * (1) the ES256 signature under the pinned join-signing key, (2) `csrSha256` is this agent's request,
 * (3) the leaf (`certificateChain[0]`) certifies this agent's key, (4) the leaf's first URI SAN is
 * `spiffe://<trustDomain>/site/<siteId>/node/<nodeId>` of the body, the only SPIFFE ID, other URIs being
 * `urn:bc:` statements, (5) the body's role and the leaf's one `OU=bc-role:<role>` are `expectedRole`.
 * A `pending` answer returns after checks 1 and 2.
 *
 * @throws JoinAnswerError naming the failed check.
 */
export function verifyJoinAnswer(envelope: SignedEnvelope, options: VerifyJoinAnswerOptions): IssuedAnswer | PendingAnswer {
  const body = checkedBody(envelope, options);

  if (body.status === 'pending') {
    const { requestId, retryAfterSeconds } = body;
    if (!isString(requestId) || typeof retryAfterSeconds !== 'number' || !(retryAfterSeconds >= 0)) {
      throw new JoinAnswerError('body', 'The pending join answer is malformed');
    }
    return { status: 'pending', requestId, retryAfterSeconds, csrSha256: options.csrSha256 };
  }
  const { status, nodeId, siteId, trustDomain, role, certificateChain, commandTrustBundle } = body;
  if (
    (status !== 'joined' && status !== 'renewed') ||
    !isString(nodeId) ||
    !isString(siteId) ||
    !isString(trustDomain) ||
    !isString(role) ||
    !isB64List(certificateChain) ||
    certificateChain.length === 0 ||
    !isB64List(commandTrustBundle)
  ) {
    throw new JoinAnswerError('body', 'The join answer body is malformed');
  }

  let leaf: ReturnType<typeof readLeafNames>;
  try {
    leaf = readLeafNames(Buffer.from(certificateChain[0]!, 'base64')); // non-empty: checked above
  } catch {
    throw new JoinAnswerError('key', 'The leaf certificate in the join answer cannot be parsed');
  }
  if (!leaf.spkiDer.equals(options.publicKeySpkiDer)) {
    throw new JoinAnswerError('key', "The leaf certificate does not certify this agent's key");
  }

  const domain = options.trustDomain ?? trustDomain;
  if (trustDomain !== domain) throw new JoinAnswerError('san', `The join answer is for trust domain ${trustDomain}, not ${domain}`);
  const spiffeId = `spiffe://${domain}/site/${siteId}/node/${nodeId}`;
  if (leaf.uris[0] !== spiffeId) {
    throw new JoinAnswerError('san', `The leaf's first URI SAN is not ${spiffeId}`);
  }
  if (leaf.uris.slice(1).some((uri) => !uri.startsWith('urn:bc:'))) {
    throw new JoinAnswerError('san', 'The leaf carries a URI SAN other than its SPIFFE ID and urn:bc: statements');
  }

  // A node that joined through a hosted (Kubernetes) token is tenant-controlled: it asked to be a `node`
  // and is certified as `node-tenant`, a role with less trust, never more.
  const acceptable = options.expectedRole === 'node' ? ['node', 'node-tenant'] : [options.expectedRole];
  if (!isString(role) || !acceptable.includes(role)) {
    throw new JoinAnswerError('role', `The join answer is for role ${role}, not ${options.expectedRole}`);
  }
  const roles = leaf.organizationalUnits.filter((ou) => ou.startsWith('bc-role:'));
  if (roles.length !== 1 || roles[0] !== `bc-role:${role}`) {
    throw new JoinAnswerError('role', `The leaf's OU is not bc-role:${role}`);
  }
  return {
    status,
    nodeId,
    siteId,
    trustDomain,
    role,
    csrSha256: options.csrSha256,
    certificateChain,
    commandTrustBundle,
    ...(body.trust !== undefined ? { trust: body.trust } : {}),
  };
}

const NONCE = /^[A-Za-z0-9_-]{43}$/;

/**
 * Verifies round one of a challenge round: (1) the signature under the pinned join-signing key, (2) that
 * `csrSha256` is this agent's request, then the body's shape (`status: challenge`, the attestor asked for, a
 * 32-byte b64url nonce, an integer `expiresAt`).
 *
 * @throws JoinAnswerError naming the failed check.
 */
export function verifyJoinChallenge(
  envelope: SignedEnvelope,
  options: Pick<VerifyJoinAnswerOptions, 'signingKeyPin' | 'signingCertificateDer' | 'signingPublicKey' | 'signingKeys' | 'csrSha256'> & {
    attestor: string;
  },
): ChallengeAnswer {
  const body = checkedBody(envelope, options);
  const { status, attestor, nonce, expiresAt, challenge } = body;
  if (
    status !== 'challenge' ||
    attestor !== options.attestor ||
    typeof nonce !== 'string' ||
    !NONCE.test(nonce) ||
    !Number.isInteger(expiresAt)
  ) {
    throw new JoinAnswerError('body', 'The challenge answer is malformed');
  }
  const extra =
    typeof challenge === 'object' && challenge !== null && !Array.isArray(challenge)
      ? { challenge: challenge as Record<string, unknown> }
      : {};
  return { status: 'challenge', attestor, nonce, expiresAt: expiresAt as number, csrSha256: options.csrSha256, ...extra };
}
