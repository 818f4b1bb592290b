import type { HardwareClaims } from '../../protocol/hardware-claims';
import { JoinAnswerError, verifyJoinAnswer, verifyJoinChallenge, type IssuedAnswer, type PendingAnswer } from '../verify-answer';
import type { TpmClient } from './client';
import { answerTpmChallenge, prepareTpmJoin, type TpmJoinMaterial } from './join-material';
import { AgentError } from '../errors';

/** Where a tokenless join lands: bcd's config `site`, and `pool` when the install names one. */
export interface TpmJoinTarget {
  readonly siteId: string;
  readonly poolId?: string;
}

/** Round one's answer, after its signature and CSR hash verified. */
interface TpmChallenge {
  /** Round one's nonce, which round two returns (protocol.md "Challenge rounds"). */
  readonly nonce: string;
  readonly credentialBlob: Buffer;
  readonly encryptedSecret: Buffer;
  readonly expiresAt: number;
}

/** The join endpoint, as the agent reaches it (the gateway, or the API directly): status and body bytes. */
export type PostJoin = (body: string) => Promise<{ status: number; body: Buffer }>;

/** A refused round (the uniform 403) or another failure; the caller decides whether to retry. */
export class TpmJoinError extends AgentError {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super('REFUSED', message);
    this.name = 'TpmJoinError';
  }
}

/**
 * The `POST /v1/join` body of a `tpm` join (docs/tpm-attestation.md): no `sealedToken`, the TPM-held node key's
 * CSR, and the attestation of round one, plus `activation` in round two.
 */
export function tpmJoinBody(
  material: TpmJoinMaterial,
  input: { claims: HardwareClaims; target: TpmJoinTarget; role?: string },
  activation?: { nonce: string; secret: Buffer },
): string {
  return JSON.stringify({
    csr: material.csr.csrDer.toString('base64'),
    claims: input.claims,
    attestor: 'tpm',
    role: input.role ?? 'node',
    attestation: {
      ...material.attestation,
      siteId: input.target.siteId,
      ...(input.target.poolId ? { poolId: input.target.poolId } : {}),
      ...(activation ? { activation: { nonce: activation.nonce, secret: activation.secret.toString('base64') } } : {}),
    },
  });
}

/** Reads round one's signed `challenge` answer; nothing in it is believed before the signature verified. */
export function readTpmChallenge(
  answerBody: Buffer,
  trust: { signingKeyPin: string; signingCertificateDer: Buffer },
  csrSha256: string,
): TpmChallenge {
  const answer = verifyJoinChallenge(JSON.parse(answerBody.toString('utf8')), { ...trust, csrSha256, attestor: 'tpm' });
  const { credentialBlob, encryptedSecret } = answer.challenge ?? {};
  if (typeof credentialBlob !== 'string' || typeof encryptedSecret !== 'string')
    throw new JoinAnswerError('body', 'The TPM challenge carries no credential');
  return {
    nonce: answer.nonce,
    credentialBlob: Buffer.from(credentialBlob, 'base64'),
    encryptedSecret: Buffer.from(encryptedSecret, 'base64'),
    expiresAt: answer.expiresAt,
  };
}

/**
 * A `tpm` join's two round trips: round one (EK, AK, the new node key's CSR signed in the TPM and its
 * Certify by the AK over sha256(csr)), the signed challenge, TPM2_ActivateCredential with the EK and the AK,
 * and round two with the secret. Returns the verified answer (joined, or pending when the machine waits for an
 * operator: retry with the same `material`, so the same CSR) and the material whose key blobs bcd keeps.
 *
 * @throws TpmJoinError on a refused round; JoinAnswerError when an answer fails its checks; TpmError when the TPM fails.
 */
export async function runTpmJoin(
  tpm: TpmClient,
  options: {
    post: PostJoin;
    trust: { signingKeyPin: string; signingCertificateDer: Buffer };
    claims: HardwareClaims;
    target: TpmJoinTarget;
    /** Round one's material of an earlier attempt (a pending join retries with the same CSR and AK). */
    material?: TpmJoinMaterial;
  },
): Promise<{ material: TpmJoinMaterial; answer: IssuedAnswer | PendingAnswer }> {
  const material = options.material ?? (await prepareTpmJoin(tpm));
  const input = { claims: options.claims, target: options.target };
  const first = await options.post(tpmJoinBody(material, input));
  if (first.status !== 200) throw new TpmJoinError(`the TPM join's round one answered ${first.status}`, first.status);
  const challenge = readTpmChallenge(first.body, options.trust, material.csr.csrSha256);
  const secret = await answerTpmChallenge(tpm, {
    ak: material.ak,
    ekKind: material.ekKind,
    credentialBlob: challenge.credentialBlob,
    encryptedSecret: challenge.encryptedSecret,
  });
  const second = await options.post(tpmJoinBody(material, input, { nonce: challenge.nonce, secret }));
  if (second.status !== 200) throw new TpmJoinError(`the TPM join's round two answered ${second.status}`, second.status);
  const answer = verifyJoinAnswer(JSON.parse(second.body.toString('utf8')), {
    ...options.trust,
    csrSha256: material.csr.csrSha256,
    publicKeySpkiDer: material.csr.spkiDer,
    expectedRole: 'node',
  });
  return { material, answer };
}
