import { createHash, randomBytes, type X509Certificate } from 'node:crypto';
import { parseCsr } from '../../crypto/csr';
import { JoinRefusal } from '../../crypto/refusal';
import type { PreparedJoin } from '../../prepare';
import { ekRootsFromEnvironment } from './ek-certificate';
import { makeCredential } from './make-credential';
import { TpmCheckFailure } from './reasons';
import { verifyTpmAttestation, type VerifiedTpmAttestation } from './verify';
import { parseTpmAttestation } from './wire';

/** What preparation proved, as plain JSON (it crosses from a preparation thread). */
export type TpmEvidence =
  | { round: 1; subject: string; credentialBlob: string; encryptedSecret: string; answerSha256: string }
  | {
      round: 2;
      subject: string;
      nonce: string;
      secretSha256: string;
      siteId: string;
      poolId: string | null;
      ekHash: string;
      ekIssuer: string | null;
      ekChainsToRoot: boolean;
      ekChainProblem: string | null;
      akStatement: string;
    };

export const evidenceOf = (join: PreparedJoin) => join.evidence as TpmEvidence;

let ekRoots: { directory: string | undefined; roots: X509Certificate[] } | undefined;
/** The vendor roots, read once per thread and setting (BETTER_COMPUTE_TPM_EK_ROOTS). */
function roots(): X509Certificate[] {
  const directory = process.env.BETTER_COMPUTE_TPM_EK_ROOTS;
  if (!ekRoots || ekRoots.directory !== directory) ekRoots = { directory, roots: ekRootsFromEnvironment() };
  return ekRoots.roots;
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();

/** The challenge's subject: the EK and the AK it was made for (MakeCredential binds both). */
const subjectOf = (facts: VerifiedTpmAttestation) => `${facts.ekHash}:${facts.akName.toString('hex')}`;

/**
 * Round one and round two of a `tpm` join (docs/tpm-attestation.md), off the event loop: every check of the
 * attestation, then either a credential challenge (MakeCredential of a fresh secret to the EK for the AK's
 * Name; the core stores the nonce with the secret's hash) or round two's activation, whose nonce and secret
 * the decision checks against the stored challenge.
 */
export function prepareTpm(request: { body: Readonly<Record<string, unknown>>; csrDer: Buffer; csrSha256: string }) {
  let evidence: TpmEvidence;
  try {
    const attestation = parseTpmAttestation(request.body.attestation);
    const csr = parseCsr(request.csrDer);
    const verdict = verifyTpmAttestation(attestation, {
      csrSha256: request.csrSha256,
      csrSpki: csr.spkiDer,
      ekRoots: roots(),
      now: new Date(),
    });
    if (!verdict.ok) throw new JoinRefusal(verdict.reason, verdict.detail);
    const { facts } = verdict;
    if (!attestation.activation) {
      const secret = randomBytes(32);
      const wrapped = makeCredential(facts.ek, facts.akName, secret);
      evidence = {
        round: 1,
        subject: subjectOf(facts),
        credentialBlob: wrapped.credentialBlob.toString('base64'),
        encryptedSecret: wrapped.encryptedSecret.toString('base64'),
        answerSha256: sha256(secret).toString('hex'),
      };
    } else {
      evidence = {
        round: 2,
        subject: subjectOf(facts),
        nonce: attestation.activation.nonce,
        secretSha256: sha256(attestation.activation.secret).toString('hex'),
        siteId: attestation.siteId,
        poolId: attestation.poolId ?? null,
        ekHash: facts.ekHash,
        ekIssuer: facts.ekCertificate?.issuer ?? null,
        ekChainsToRoot: facts.ekCertificate?.chainsToRoot === true,
        ekChainProblem:
          facts.ekCertificate && !facts.ekCertificate.chainsToRoot ? (facts.ekCertificate.chainProblem ?? 'does not chain') : null,
        akStatement: facts.akStatement,
      };
    }
  } catch (error) {
    if (error instanceof TpmCheckFailure) throw new JoinRefusal(error.reason, error.detail);
    throw error;
  }
  return { token: null, evidence };
}
