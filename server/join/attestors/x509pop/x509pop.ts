import { createHash, createPublicKey, verify } from 'node:crypto';
import { readLeafNames } from '../../../../protocol/certificate-names';
import { challengeMismatch, consumeChallenges, loadChallenges, type StoredChallenge } from '../../challenges';
import { parseCsr } from '../../crypto/csr';
import { JoinRefusal } from '../../crypto/refusal';
import { checkRenewal } from '../registry';
import { refuse, type Admission } from '../../decide';
import type { PreparedJoin } from '../../prepare';
import type { Attestor, AttestorVerdict } from '../types';
import { SELECT_X509POP_LEAVES } from './sql';
import { toLeafRow, type LeafRow, type LeafSqlRow } from './rows';
import { X509POP, X509POP_REJOIN_WINDOW_SECONDS, x509popProofMessage } from '../../../../protocol/x509pop-wire';

/** What preparation proved of an x509pop join (plain JSON: it crosses threads). */
interface X509popEvidence {
  /** The presented leaf, b64 DER, and its key's SHA-256 (hex), which finds its node_certs row. */
  leafDer: string;
  leafSpkiSha256: string;
  /** The node the leaf's SPIFFE ID names. */
  nodeId: string;
  /** `urn:bc:` statements of the leaf, kept on the new certificate. */
  statements: string[];
  /** Round two: the nonce whose proof verified under the leaf's key over this request's CSR hash. */
  nonce: string | null;
  /** The leaf names a TPM AK and that AK certified the new key (the only way such a leaf gets this far). */
  keyAttested: boolean;
}

interface X509popState {
  leaves: Map<string, LeafRow>;
  challenges: Map<string, StoredChallenge>;
  /** Nonces round two named in this batch: all consumed, whatever was decided. */
  used: string[];
  /** Nodes this batch already re-admitted: a second re-join of one node finds its leaf superseded. */
  claimed: Set<string>;
}

const B64 = /^[A-Za-z0-9+/]+={0,2}$/;
const NONCE = /^[A-Za-z0-9_-]{43}$/;
const PROOF = /^[A-Za-z0-9_-]{86}$/;
const SPIFFE_NODE = /^spiffe:\/\/[^/]+\/site\/[^/]+\/node\/([^/]+)$/;

const evidenceOf = (join: PreparedJoin) => join.evidence as X509popEvidence;

/**
 * A re-join renews an expired identity, so it passes what a renewal of its leaf would (the registry's
 * checkRenewal): a leaf naming a TPM AK (`urn:bc:tpm-ak:`) re-joins only when `attestation.keyAttestation` is that
 * AK's TPM2_Certify of the new CSR's key over sha256(csr), checked exactly as at renewal. The statements come from
 * the presented leaf, which decide() then matches byte for byte to its node_certs row, so a node can neither drop
 * them nor re-join with a key outside its TPM: never downgraded to a proof of possession. Answers whether a
 * check applied (the new key is then attested).
 */
function checkRenewedLeaf(keyAttestation: unknown, statements: string[], csrDer: Buffer, csrSha256: string): boolean {
  // Absent, null and `{}` (what a software node's renewal sends) are all missing; any other shape is malformed.
  const absent =
    keyAttestation === undefined ||
    keyAttestation === null ||
    (typeof keyAttestation === 'object' && !Array.isArray(keyAttestation) && Object.keys(keyAttestation).length === 0);
  let spkiDer: Buffer | undefined;
  const verdict = checkRenewal({
    statements,
    keyAttestation: absent ? null : (keyAttestation as Record<string, unknown>),
    // Parsed only when a check needs the key: the core verifies every CSR after preparation.
    csr: {
      csrSha256,
      get spkiDer() {
        return (spkiDer ??= parseCsr(csrDer).spkiDer);
      },
    },
  });
  if (!verdict.ok) throw new JoinRefusal(`x509pop:${verdict.reason}`, verdict.detail);
  return verdict.checked;
}

/**
 * Parses `attestation` (round one: `certificate`; round two: also `nonce` and `proof`; both rounds, for a leaf
 * naming a TPM AK: `keyAttestation`), verifying the proof and the key attestation.
 */
function prepareX509pop(body: Readonly<Record<string, unknown>>, csrDer: Buffer, csrSha256: string): X509popEvidence {
  const attestation = body.attestation;
  if (typeof attestation !== 'object' || attestation === null || Array.isArray(attestation))
    throw new JoinRefusal('join:malformed', 'attestation');
  const { certificate, nonce, proof, keyAttestation } = attestation as Record<string, unknown>;
  if (typeof certificate !== 'string' || certificate.length > 8192 || !B64.test(certificate))
    throw new JoinRefusal('join:malformed', 'attestation.certificate');
  const roundTwo = nonce !== undefined || proof !== undefined;
  if (roundTwo && (typeof nonce !== 'string' || !NONCE.test(nonce) || typeof proof !== 'string' || !PROOF.test(proof))) {
    throw new JoinRefusal('join:malformed', 'attestation.nonce and attestation.proof');
  }
  const der = Buffer.from(certificate, 'base64');
  let names;
  try {
    names = readLeafNames(der);
  } catch (error) {
    throw new JoinRefusal('x509pop:certificate', 'the certificate does not parse', { cause: error });
  }
  const nodeId = SPIFFE_NODE.exec(names.uris[0] ?? '')?.[1];
  if (!nodeId) throw new JoinRefusal('x509pop:certificate', 'the certificate names no node');
  const statements = names.uris.slice(1).filter((uri) => uri.startsWith('urn:bc:'));
  if (roundTwo) {
    let proven = false;
    try {
      const key = createPublicKey({ key: names.spkiDer, format: 'der', type: 'spki' });
      proven = verify(
        'sha256',
        x509popProofMessage(nonce as string, csrSha256),
        { key, dsaEncoding: 'ieee-p1363' },
        Buffer.from(proof as string, 'base64url'),
      );
    } catch {
      proven = false;
    }
    if (!proven) throw new JoinRefusal('x509pop:proof', 'the proof does not verify under the certificate key over this CSR');
  }
  // Checked in round one too, so a request that round two would refuse gets no nonce.
  const keyAttested = checkRenewedLeaf(keyAttestation, statements, csrDer, csrSha256);
  return {
    leafDer: der.toString('base64'),
    leafSpkiSha256: createHash('sha256').update(names.spkiDer).digest('hex'),
    nodeId,
    statements,
    nonce: roundTwo ? (nonce as string) : null,
    keyAttested,
  };
}

/**
 * The `x509pop` attestor: a node whose certificate expired while it was offline re-joins with it (joining.md,
 * Renewal), proving possession of its last key in a challenge round. Round one presents the last leaf and the
 * new CSR and gets a nonce bound to the CSR and the node; round two sends the same request with the nonce and
 * an ES256 proof by the last key over (nonce, CSR hash) (wire.ts). Admitted only when the leaf is byte for byte
 * a node_certs row of the node's current identity generation, unrevoked, expired less than 7 days ago, the
 * node not retired, and the node's pool lists `x509pop` in `policy.joinAttestors` (opt-in: a pool without the
 * policy refuses it). The admission is a reclaim of the node: same id, generation + 1, older certificates
 * revoked, the certificate keeping the old one's role and statements. A leaf naming a TPM AK also needs that
 * AK's key attestation of the new key in both rounds (checkRenewedLeaf). Round one needs no token, so the
 * join core limits its challenges per source address (`admitChallenges`; `x509pop:rate-limited`). Every refusal
 * has its own reason.
 */
export const x509popAttestor: Attestor<X509popState> = {
  name: X509POP,

  prepare: (request) => ({ token: null, evidence: prepareX509pop(request.body, request.csrDer, request.csrSha256) }),

  // Two re-joins of one node are never decided by two batches at once.
  holdKeys: (join) => [`node:${evidenceOf(join).nodeId}`],

  async load(client, joins) {
    const evidence = joins.map(evidenceOf);
    const [leaves, challenges] = await Promise.all([
      client.query<LeafSqlRow>(SELECT_X509POP_LEAVES, [
        [...new Set(evidence.map((e) => e.leafSpkiSha256))].map((h) => Buffer.from(h, 'hex')),
      ]),
      loadChallenges(
        client,
        X509POP,
        evidence.flatMap((e) => (e.nonce ? [e.nonce] : [])),
      ),
    ]);
    return {
      leaves: new Map(leaves.rows.map((r) => [r.spki_sha256, toLeafRow(r)])),
      challenges,
      used: [],
      claimed: new Set(),
    };
  },

  decide({ join, now }, state): AttestorVerdict {
    const evidence = evidenceOf(join);
    if (evidence.nonce) state.used.push(evidence.nonce);
    const row = state.leaves.get(evidence.leafSpkiSha256);
    // Byte for byte one of our certificates, naming the node its row belongs to.
    if (!row || !row.der.equals(Buffer.from(evidence.leafDer, 'base64')) || row.nodeId !== evidence.nodeId)
      return refuse('x509pop:certificate-unknown');
    const tenant = row.tenantId;
    // An older generation's leaf (revoked too, by the reclaim that superseded it) says why first.
    if (row.certGeneration !== row.nodeGeneration || state.claimed.has(row.nodeId)) return refuse('x509pop:generation', tenant);
    if (row.isRevoked) return refuse('x509pop:revoked', tenant);
    if (row.state === 'retired') return refuse('x509pop:node-retired', tenant);
    // A ramdisk identity's life is capped from its first issue (renewal never extends it): it boots again.
    if (row.certRole === 'ramdisk') return refuse('x509pop:role', tenant);
    if (row.notAfter.getTime() > now.getTime()) return refuse('x509pop:not-expired', tenant);
    if (now.getTime() - row.notAfter.getTime() >= X509POP_REJOIN_WINDOW_SECONDS * 1000) return refuse('x509pop:expired', tenant);
    const pool = row.pool;
    if (!pool || !pool.joinAttestors?.includes(X509POP)) return refuse('x509pop:pool-attestor', tenant);
    if (pool.agent !== 'bcd' || pool.isArchived || pool.ownerTenantId !== tenant || pool.siteId !== row.siteId)
      return refuse('x509pop:pool', tenant);

    if (!evidence.nonce) return { admitted: false, challenge: true, subject: row.nodeId, tenantId: tenant };
    if (challengeMismatch(state.challenges.get(evidence.nonce), { csrSha256: join.csr.csrSha256, subject: row.nodeId }))
      return refuse('x509pop:nonce', tenant);
    // One batch never uses a nonce twice.
    state.challenges.delete(evidence.nonce);
    state.claimed.add(row.nodeId);
    const admission: Admission = {
      admitted: true,
      reclaim: {
        id: row.nodeId,
        tenantId: tenant,
        siteId: row.siteId,
        poolId: row.poolId,
        role: row.role,
        identityGeneration: row.nodeGeneration,
        labels: row.labels,
      },
      tenantId: tenant,
      siteId: row.siteId,
      poolId: row.poolId,
      role: row.role,
      certRole: row.certRole,
      hardwareKeyTrusted: row.hardwareKeyTrusted,
      trust: row.trust,
      state: pool.hasAcceptanceChecks ? 'adopting' : 'adopted',
      actor: `${X509POP}:${row.serial}`,
      ...(evidence.statements.length ? { statements: evidence.statements } : {}),
      ...(evidence.keyAttested ? { nodeKey: 'tpm' as const } : {}),
    };
    return admission;
  },

  async write(client, state) {
    await consumeChallenges(client, state.used);
    return state.used.length > 0;
  },
};
