import type { TrustStore } from './store';

/** The `join` section of the well-known document, and its `next` (protocol.md "The well-known document"). */
interface JoinSection {
  signingCertificate?: unknown;
  encryptionJwk?: unknown;
  next?: { signingCertificate?: unknown; encryptionJwk?: unknown };
}

/**
 * Learns the public keys the well-known document publishes for pins the store already trusts: the join-signing
 * certificates (`join.signingCertificate`, `join.next.signingCertificate`) and encryption JWKs (`join.encryptionJwk`,
 * `join.next.encryptionJwk`). A key whose pin is not trusted is ignored, so the document needs no trust in its
 * transport. Returns how many signing keys were learned.
 */
export function learnFromWellKnown(store: TrustStore, document: unknown): number {
  const join = (document as { join?: JoinSection } | null)?.join;
  if (typeof join !== 'object' || join === null) return 0;
  let learned = 0;
  for (const section of [join, join.next]) {
    if (typeof section !== 'object' || section === null) continue;
    if (store.learnSigningCertificate(section.signingCertificate)) learned++;
    store.learnEncryptionJwk(section.encryptionJwk);
  }
  return learned;
}
