import { hashTokenSecret, parseJoinToken } from '../../tokens/secret';
import { JoinRefusal } from '../crypto/refusal';
import { openSealedToken } from '../crypto/open-seal';
import type { AttestorPrepared, JoinRequestFields, PrepareContext } from './types';

/**
 * The preparation every token-carrying attestor shares (protocol.md "The sealed token"): `sealedToken` must
 * be a non-empty string (`join:malformed`), the seal must open under JoinService's key and name this
 * request's CSR (`join:token`), and its plaintext must be a bearer token (`<attestor>:malformed`). The seal
 * is opened before the CSR is parsed, so a CSR swapped after sealing is refused as a bad seal.
 */
export function prepareSealedToken(attestor: string, request: JoinRequestFields, context: PrepareContext): AttestorPrepared {
  const { sealedToken } = request.body;
  if (typeof sealedToken !== 'string' || sealedToken.length === 0) throw new JoinRefusal('join:malformed', 'sealedToken');
  const seal = openSealedToken(sealedToken, {
    encryptionKey: context.encryptionKey,
    encryptionKeys: context.encryptionKeys,
    csrSha256: request.csrSha256,
  });
  const token = parseJoinToken(seal.token);
  if (!token) throw new JoinRefusal(`${attestor}:malformed`, 'not a bcjt_ token');
  return { token: { id: token.id, sealedAt: seal.iat, secretHash: hashTokenSecret(token.secret) } };
}
