import type { KeyObject } from 'node:crypto';
import { verifyEnvelope } from '../../protocol/envelope';

/** A signed envelope as protocol.md "Answers" has it: `sig` by the key in use and, in a rotation, `sigs`. */
interface TrustedEnvelope {
  readonly body: string;
  readonly sig: string;
  readonly sigs?: ReadonlyArray<{ readonly pin: string; readonly sig: string }>;
}

/** More signatures than a rotation makes (two keys) are not looked at. */
const MAX_SIGS = 8;

/**
 * Verifies an envelope under the signing keys the agent trusts (`keys`: pin to public key, only trusted pins)
 * and only then parses its body: accepted when `sig` verifies under one of them, or any `sigs[i]` whose pin
 * is one of them verifies. Nothing of the body is read before.
 *
 * @throws Error when no trusted key's signature verifies (or the envelope is malformed).
 */
export function verifyTrustedEnvelope(envelope: unknown, keys: ReadonlyMap<string, KeyObject>): unknown {
  const e = (typeof envelope === 'object' && envelope !== null ? envelope : {}) as Partial<TrustedEnvelope>;
  if (typeof e.body !== 'string' || typeof e.sig !== 'string') throw new Error('the envelope is malformed');
  if (keys.size === 0) throw new Error('no trusted join signing key is known to verify the envelope with');
  const attempts: Array<[KeyObject, string]> = [];
  for (const key of keys.values()) attempts.push([key, e.sig]);
  if (Array.isArray(e.sigs))
    for (const entry of e.sigs.slice(0, MAX_SIGS)) {
      const key = typeof entry?.pin === 'string' ? keys.get(entry.pin) : undefined;
      if (key && typeof entry.sig === 'string') attempts.push([key, entry.sig]);
    }
  let problem = 'the envelope is not signed by a trusted join signing key';
  for (const [key, sig] of attempts) {
    try {
      return verifyEnvelope({ body: e.body, sig }, key);
    } catch (error) {
      // A signature that verified over bytes that are not JSON is the signer's mistake, not a forgery.
      if ((error as Error).message === 'The envelope body is not JSON') problem = 'the envelope body is not JSON';
    }
  }
  throw new Error(problem);
}
