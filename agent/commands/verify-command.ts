import type { KeyObject } from 'node:crypto';
import { COMMAND_ID, parseCommandBody, type CommandBody } from '../../protocol/command-wire';
import { verifyTrustedEnvelope } from '../trust/envelope';
import { keyOfCertificate } from '../trust/trust-set';

/** Why a verified command is answered `rejected` (the result's `output.reason`). */
export type RejectReason = 'malformed' | 'other-node' | 'expired' | 'replayed' | 'unknown-kind' | 'busy' | 'replay-store-unusable';

/**
 * What to do with a `command` event: run it, answer it `rejected` (its body verified and names a command id),
 * or only log it (its signature did not verify, or nothing in it names a command).
 */
type CommandVerdict =
  { readonly run: CommandBody } | { readonly reject: string; readonly reason: RejectReason } | { readonly ignore: string };

/** The public keys of the command-signing certificates held (standard base64 DER), by pin. */
function commandKeys(bundle: readonly string[]): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  for (const certificate of bundle) {
    const found = keyOfCertificate(certificate);
    if (found) keys.set(found.pin, found.key);
  }
  return keys;
}

/**
 * Checks a `command` event's envelope (protocol.md "Commands"): `sig`, or a `sigs` entry, must verify under the
 * key of a certificate in `bundle` (the commandTrustBundle of the trust set held) before a byte of the body is
 * read; then the body must parse, name `nodeId`, and its `notAfter` must not have passed at `nowSeconds`.
 *
 * An envelope whose signature does not verify is never answered: its command id is unverified data, and
 * answering `rejected` for it would let whoever forged it end a real command of that id before it arrives.
 * The replay check is the runner's (it holds the store).
 */
export function checkCommandEnvelope(envelope: unknown, bundle: readonly string[], nodeId: string, nowSeconds: number): CommandVerdict {
  const keys = commandKeys(bundle);
  if (keys.size === 0) return { ignore: 'no command-signing certificate is held (the trust set has no commandTrustBundle)' };
  let value: unknown;
  try {
    value = verifyTrustedEnvelope(envelope, keys);
  } catch (error) {
    const why = (error as Error).message;
    return {
      ignore:
        why === 'the envelope body is not JSON' || why === 'the envelope is malformed'
          ? why
          : 'the envelope is not signed by a command-signing key of the trust set',
    };
  }
  const body = parseCommandBody(value);
  if (!body) {
    // Signed by a trusted key, yet not a command body: answered when it names a command id at all.
    const id = (value as { commandId?: unknown } | null)?.commandId;
    return typeof id === 'string' && COMMAND_ID.test(id) ? { reject: id, reason: 'malformed' } : { ignore: 'the body is not a command' };
  }
  if (body.nodeId !== nodeId) return { reject: body.commandId, reason: 'other-node' };
  if (nowSeconds > body.notAfter) return { reject: body.commandId, reason: 'expired' };
  return { run: body };
}
