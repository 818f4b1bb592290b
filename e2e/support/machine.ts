import { randomBytes, randomUUID } from 'node:crypto';
import type { APIRequestContext } from '@playwright/test';
import { prepareJoinAttempt, type JoinTrust } from '../../agent/join';

/** Claims of a distinct, trusted machine (a product UUID, a serial and a permanent MAC). */
export function machineClaims() {
  return {
    productUuid: randomUUID(),
    productSerial: `SN-${randomBytes(4).toString('hex').toUpperCase()}`,
    macs: [`3c:ec:ef:${randomBytes(3).toString('hex').match(/../g)!.join(':')}`],
    hostname: 'e2e-join',
  };
}

/** The agent's trust, as bcd resolves it from the well-known document. */
async function joinTrust(request: APIRequestContext): Promise<JoinTrust> {
  const doc = await (await request.get('/api/compute/.well-known/better-compute')).json();
  return {
    encryptionJwk: doc.join.encryptionJwk,
    signingCertificateDer: Buffer.from(doc.join.signingCertificate, 'base64'),
    signingKeyPin: doc.join.signingKeyPin,
  };
}

/** Joins a new machine with `token` as the agent would, over HTTP; answers the response and the CSR's hash. */
export async function joinMachine(request: APIRequestContext, token: string, overrides: { attestor?: string } = {}) {
  const attempt = await prepareJoinAttempt({ token, trust: await joinTrust(request), claims: machineClaims() });
  const body = overrides.attestor ? JSON.stringify({ ...JSON.parse(attempt.body), attestor: overrides.attestor }) : attempt.body;
  const response = await request.post('/api/compute/v1/join', { data: body, headers: { 'content-type': 'application/json' } });
  return { response, csrSha256: attempt.keys.csrSha256 };
}
