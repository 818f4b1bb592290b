/**
 * The x509pop wire contract (protocol.md "x509pop re-joins"), shared by JoinService and the agent. Pure: no
 * database, no keys, so bcd's bundle can import it.
 */

export const X509POP = 'x509pop';

/**
 * How long after its certificate expired a node may re-join with it: 7 days (joining.md). A constant, not a
 * setting: the window bounds how long a stolen, expired key stays useful, and is the same on every server.
 */
export const X509POP_REJOIN_WINDOW_SECONDS = 7 * 86_400;

/** Domain separation of the proof: no other signature a node key makes (renew-pop, session) has these bytes. */
const X509POP_PROOF_LABEL = 'bc-x509pop-rejoin-v1';

/**
 * The exact bytes `proof` signs: UTF-8 of `bc-x509pop-rejoin-v1\n<nonce>\n<csrSha256>`, the nonce as the
 * challenge gave it (b64url) and the hash of the CSR of this request (lowercase hex). The signature is ES256
 * by the last certificate's key: ECDSA P-256 over SHA-256 of these bytes, r||s (64 bytes), sent b64url.
 */
export function x509popProofMessage(nonce: string, csrSha256: string): Buffer {
  return Buffer.from(`${X509POP_PROOF_LABEL}\n${nonce}\n${csrSha256}`, 'utf8');
}
