import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { writeIdentity } from '../agent/identity-store';
import type { NodeKeyAndCsr } from '../agent/keys';
import { verifyJoinAnswer, type IssuedAnswer } from '../agent/verify-answer';

/** The join keys a test's agent verifies an answer with: the join-signing key's pin and certificate. */
interface SigningTrust {
  signingKeyPin: string;
  signingCertificateDer: Buffer;
}

/** A join answer's bytes (a 200's body) verified as the agent verifies them, for the keys the join was made with. */
export function verifiedJoinAnswer(body: Buffer, trust: SigningTrust, keys: NodeKeyAndCsr, expectedRole = 'node'): IssuedAnswer {
  return verifyJoinAnswer(JSON.parse(body.toString()), {
    signingKeyPin: trust.signingKeyPin,
    signingCertificateDer: trust.signingCertificateDer,
    csrSha256: keys.csrSha256,
    publicKeySpkiDer: keys.spkiDer,
    expectedRole,
  }) as IssuedAnswer;
}

/** Stores the identity an answer issued to `keys` in a new directory (named from `prefix`), as an agent keeps it. */
export async function storeJoinedIdentity(prefix: string, keys: NodeKeyAndCsr, answer: IssuedAnswer): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  await writeIdentity(dir, {
    privateKeyPem: keys.privateKeyPem,
    certificateChain: answer.certificateChain,
    nodeId: answer.nodeId,
    siteId: answer.siteId,
    trustDomain: answer.trustDomain,
    role: answer.role,
  });
  return dir;
}
