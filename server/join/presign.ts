import { newId } from '../ids';
import type { JoinCrypto } from '../pki/join-crypto';
import { issueNodeCertificate, type IssuedNodeCertificate, type NodeCertificateRole } from '../pki/node-certificate';
import type { PreparedJoin } from './prepare';

/** A certificate signed before the admission transaction, for the decision the token last produced. */
export interface Presigned {
  nodeId: string;
  siteId: string;
  certRole: string;
  cert: IssuedNodeCertificate;
}

const MAX_HINTS = 10_000;

/**
 * Remembers, per token, what its last admission put in a certificate (site and role), and the database
 * clock's offset from ours. With it, a join's certificate is signed before the transaction takes the
 * token's lock, so a busy shared token is held only for the decision and the write; the transaction
 * signs again itself whenever its decision differs (a reclaim, a changed pool policy, a first join).
 */
export class CertificateHints {
  private readonly hints = new Map<string, { siteId: string; certRole: string }>();
  private offsetMs = 0;

  observeDatabaseNow(now: Date) {
    this.offsetMs = now.getTime() - Date.now();
  }

  remember(tokenId: string, siteId: string, certRole: string) {
    if (this.hints.size >= MAX_HINTS) this.hints.clear();
    this.hints.set(tokenId, { siteId, certRole });
  }

  presign(join: PreparedJoin, crypto: JoinCrypto, ttlSeconds: number): Presigned | null {
    const hint = this.hints.get(join.tokenId);
    if (!hint) return null;
    const nodeId = newId('node');
    const cert = issueNodeCertificate(crypto.nodeCa, {
      publicKeySpkiDer: join.csr.spkiDer,
      trustDomain: crypto.trustDomain,
      siteId: hint.siteId,
      nodeId,
      role: hint.certRole as NodeCertificateRole,
      notBefore: new Date(Date.now() + this.offsetMs),
      ttlSeconds,
    });
    return { nodeId, siteId: hint.siteId, certRole: hint.certRole, cert };
  }
}
