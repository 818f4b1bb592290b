import { signEnvelope } from '../protocol/envelope';
import { parseCsr } from '../server/join/crypto/csr';
import { openSeal } from '../server/join/crypto/open-seal';
import type { JoinAttempt } from '../agent/join';
import { issueNodeCertificate } from '../server/pki/issuance/node-certificate';
import type { JoinCrypto } from '../server/pki/issuance/join-crypto';

/**
 * Joins per second of the server's cryptography alone, on one core: verify the CSR, open the seal, issue
 * the certificate and sign the answer, for each prepared attempt.
 */
export function measureJoinCrypto(crypto: JoinCrypto, attempts: JoinAttempt[]): number {
  const started = performance.now();
  for (const attempt of attempts) {
    const body = JSON.parse(attempt.body) as { csr: string; sealedToken: string };
    const csr = parseCsr(Buffer.from(body.csr, 'base64'));
    openSeal(body.sealedToken, { encryptionKey: crypto.encryptionKey, csrSha256: csr.csrSha256 });
    const cert = issueNodeCertificate(crypto.nodeCa, {
      publicKeySpkiDer: csr.spkiDer,
      trustDomain: crypto.trustDomain,
      siteId: 'site_bench',
      nodeId: 'node_bench',
      role: 'node',
      notBefore: new Date(),
      ttlSeconds: 86_400,
    });
    signEnvelope(
      {
        status: 'joined',
        nodeId: 'node_bench',
        certificateChain: [cert.der.toString('base64'), crypto.nodeCaCertificate],
        csrSha256: csr.csrSha256,
      },
      crypto.signingKey,
    );
  }
  return Math.round((attempts.length / (performance.now() - started)) * 1000);
}
