import { newId } from '../ids';
import { logError } from '../log';
import type { JoinCrypto } from '../pki/issuance/join-crypto';
import {
  certificateTtlFor,
  issueNodeCertificate,
  type IssuedNodeCertificate,
  type NodeCertificateRole,
} from '../pki/issuance/node-certificate';
import { secretHashMatches } from './crypto/constant-time';
import type { PreparedJoin } from './prepare';

/** A certificate signed before the admission transaction, for the decision the token last produced. */
export interface Presigned {
  nodeId: string;
  siteId: string;
  certRole: string;
  cert: IssuedNodeCertificate;
}

interface Hint {
  siteId: string;
  certRole: string;
  /** The token's secret hash, as the admission that left the hint verified it. */
  secretHash: Buffer;
}

const MAX_HINTS = 10_000;

/**
 * Remembers, per token, what its last admission put in a certificate (site and role), and the database
 * clock's offset from ours. With it, a join's certificate is signed before the transaction takes the
 * token's lock, so a busy shared token is held only for the decision and the write; the transaction
 * signs again itself whenever its decision differs (a reclaim, a changed pool policy, a first join).
 *
 * A certificate is signed early only for a join that presents the token's secret: were it signed for any
 * join naming a known token id, a wrong secret would cost an ECDSA signature more than an unknown id, and
 * the refusal's timing would tell whether an id exists. The secret is compared in constant time, against
 * a stand-in when the token has no hint, so both refusals do the same work here.
 */
export class CertificateHints {
  private readonly hints = new Map<string, Hint>();
  private offsetMs = 0;

  observeDatabaseNow(now: Date) {
    this.offsetMs = now.getTime() - Date.now();
  }

  remember(tokenId: string, siteId: string, certRole: string, secretHash: Buffer) {
    if (this.hints.size >= MAX_HINTS) this.hints.clear();
    this.hints.set(tokenId, { siteId, certRole, secretHash: Buffer.from(secretHash) });
  }

  /**
   * The join's certificate signed early, or null when there is no hint, the secret does not match it, or
   * signing fails. Never throws: the early signature is only an optimisation, and the admission signs (and
   * decides) for itself whenever there is none.
   */
  presign(join: PreparedJoin, crypto: JoinCrypto, configuredTtlSeconds: number): Presigned | null {
    if (!join.token) return null;
    const hint = this.hints.get(join.token.id);
    if (!secretHashMatches(hint?.secretHash, join.token.secretHash) || !hint) return null;
    try {
      const nodeId = newId('node');
      const cert = issueNodeCertificate(crypto.nodeCa, {
        publicKeySpkiDer: join.csr.spkiDer,
        trustDomain: crypto.trustDomain,
        siteId: hint.siteId,
        nodeId,
        role: hint.certRole as NodeCertificateRole,
        notBefore: new Date(Date.now() + this.offsetMs),
        ttlSeconds: certificateTtlFor(hint.certRole, configuredTtlSeconds),
      });
      return { nodeId, siteId: hint.siteId, certRole: hint.certRole, cert };
    } catch (error) {
      logError('a certificate could not be signed before the admission; the admission signs it', error);
      return null;
    }
  }
}
