import { sign, verify, type KeyObject } from 'node:crypto';
import { decodeBase64url } from './base64url';

/** A signed answer: `body` is the base64url of the body's JSON bytes, `sig` the ES256 signature (r||s) over them. */
export interface SignedEnvelope {
  readonly body: string;
  readonly sig: string;
}

/**
 * Signs an answer body with the join-signing key (ES256, IEEE P1363 r||s) over the exact JSON bytes that
 * `body` carries, so the agent verifies the bytes it will parse and nothing is re-serialized in between.
 */
export function signEnvelope(body: object, signingKey: KeyObject): SignedEnvelope {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  const sig = sign('sha256', bytes, { key: signingKey, dsaEncoding: 'ieee-p1363' });
  return { body: bytes.toString('base64url'), sig: sig.toString('base64url') };
}

/**
 * Verifies an envelope under `publicKey` (a P-256 key) and only then parses its body.
 *
 * @returns the parsed body, never read before the signature verified.
 * @throws Error when the envelope is malformed, the signature does not verify, or the body is not JSON.
 */
export function verifyEnvelope(envelope: SignedEnvelope, publicKey: KeyObject): unknown {
  const bytes = typeof envelope?.body === 'string' ? decodeBase64url(envelope.body) : null;
  const sig = typeof envelope?.sig === 'string' ? decodeBase64url(envelope.sig) : null;
  if (!bytes || !sig || sig.length !== 64) throw new Error('The envelope is malformed');
  let valid = false;
  try {
    valid = verify('sha256', bytes, { key: publicKey, dsaEncoding: 'ieee-p1363' }, sig);
  } catch {
    valid = false;
  }
  if (!valid) throw new Error('The envelope signature does not verify');
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    throw new Error('The envelope body is not JSON');
  }
}
