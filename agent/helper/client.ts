import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { sequence, unsignedInteger } from '../../protocol/der/writer';
import type { TlsClientSigner } from '../tls13/client';
import { SCHEME } from '../tls13/handshake';
import { AK_KEY_FILE } from '../identity-store';
import type { TpmCsr } from '../tpm/csr';
import { encodeKeyBlob, type TpmKeyBlob } from '../tpm/keys';
import type { TpmJoinKeys } from '../tpm/node-key';
import { p256SpkiOf } from '../tpm/public-area';
import { TpmRenewalError, type TpmKeyAttestationBody } from '../tpm/renewal';
import {
  encodeFrame,
  errorAnswerSchema,
  FrameReader,
  HELPER_WIRE_VERSION,
  MAX_ANSWER_BYTES,
  nextKeyAnswerSchema,
  signAnswerSchema,
  type HelperRequest,
  type SignPurpose,
} from './wire';
import { agentErrorClass } from '../errors';

/**
 * What `bcd node`, running as the `[helper]` user, asks of `bcd helper` for a TPM-held node key: the three things
 * it would otherwise open the TPM for.
 */
export interface NodeKeyHelper {
  /** The socket, for messages. */
  readonly socketPath: string;
  /** ECDSA P-256 over sha256(`message`) by `key`, as r || s (64 bytes). */
  sign(key: TpmKeyBlob, purpose: SignPurpose, message: Buffer): Promise<Buffer>;
  /** The next node key, its CSR signed in the TPM, and with an AK the Certify of it (what nextTpmKey returns). */
  nextKey(input: { ak: TpmKeyBlob | null; akStatement: string | null }): Promise<{
    nodeKey: TpmKeyBlob;
    csr: TpmCsr;
    keyAttestation?: TpmKeyAttestationBody;
  }>;
}

/** The helper could not be reached or refused; a renewal that needs it is not sent. */
class HelperError extends agentErrorClass('UNAVAILABLE', 'HelperError') {}

const blob = (key: TpmKeyBlob) => ({ public: key.publicArea.toString('base64'), private: key.privateBlob.toString('base64') });

/** One request on a connection of its own, and its answer. */
export function requestHelper(socketPath: string, request: HelperRequest, timeoutMs = 30_000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    const reader = new FrameReader(MAX_ANSWER_BYTES);
    const fail = (message: string) => {
      socket.destroy();
      reject(new HelperError(`bcd helper at ${socketPath}: ${message}`));
    };
    socket.setTimeout(timeoutMs, () => fail('no answer in time'));
    socket.once('error', (error) => fail(error.message));
    socket.once('connect', () => socket.write(encodeFrame(request)));
    socket.on('data', (chunk: Buffer) => {
      try {
        const body = reader.push(chunk);
        if (!body) return;
        socket.destroy();
        const value: unknown = JSON.parse(body.toString('utf8'));
        const refused = errorAnswerSchema.safeParse(value);
        if (refused.success) return fail(`${refused.data.error}: ${refused.data.message}`);
        resolve(value);
      } catch (error) {
        fail((error as Error).message);
      }
    });
    socket.once('end', () => fail('the connection closed without an answer'));
  });
}

/** The {@link NodeKeyHelper} of the helper listening on `socketPath`. */
export function nodeKeyHelper(socketPath: string): NodeKeyHelper {
  return {
    socketPath,
    async sign(key, purpose, message) {
      const answer = signAnswerSchema.parse(
        await requestHelper(socketPath, {
          v: HELPER_WIRE_VERSION,
          op: 'sign',
          purpose,
          key: blob(key),
          message: message.toString('base64'),
        }),
      );
      const pad = (v: Buffer) => Buffer.concat([Buffer.alloc(32 - v.length), v]);
      return Buffer.concat([pad(Buffer.from(answer.r, 'base64')), pad(Buffer.from(answer.s, 'base64'))]);
    },
    async nextKey({ ak, akStatement }) {
      if (akStatement && !ak)
        throw new TpmRenewalError(
          `the certificate names ${akStatement}, but the identity directory holds no ${AK_KEY_FILE}: the renewal needs that AK`,
        );
      const request: HelperRequest = {
        v: HELPER_WIRE_VERSION,
        op: 'next-key',
        akStatement: akStatement ?? null,
        ak: akStatement && ak ? blob(ak) : null,
      };
      const answer = nextKeyAnswerSchema.parse(await requestHelper(socketPath, request));
      const nodeKey = { publicArea: Buffer.from(answer.key.public, 'base64'), privateBlob: Buffer.from(answer.key.private, 'base64') };
      const csrDer = Buffer.from(answer.csr, 'base64');
      const csr: TpmCsr = { csrDer, spkiDer: p256SpkiOf(nodeKey.publicArea), csrSha256: createHash('sha256').update(csrDer).digest('hex') };
      return { nodeKey, csr, ...(answer.keyAttestation ? { keyAttestation: answer.keyAttestation } : {}) };
    },
  };
}

/**
 * A software identity's next key made in the helper's TPM (no AK, so no Certify: proved by the software key's
 * signature only), as a renewal or an x509pop re-join sends it; the identity is TPM-held from then on. Null when
 * the helper answers that the host has no TPM, or cannot make it: the next key stays in software, said in one
 * line through `log`, and the renewal goes on.
 */
export async function nextKeyInHelperTpm(helper: NodeKeyHelper, log?: (line: string) => void): Promise<TpmJoinKeys | null> {
  try {
    const next = await helper.nextKey({ ak: null, akStatement: null });
    return { ...next.csr, privateKeyPem: encodeKeyBlob(next.nodeKey), nodeKey: next.nodeKey };
  } catch (error) {
    log?.(`agent: the next node key stays in software (${(error as Error).message})`);
    return null;
  }
}

/** The DER `ECDSA-Sig-Value` of an r || s signature (a TLS CertificateVerify carries DER). */
const derOfRs = (rs: Buffer): Buffer => sequence(unsignedInteger(rs.subarray(0, 32)), unsignedInteger(rs.subarray(32)));

/**
 * agent/tpm/tls-signer.ts's `tpmTlsSigner`, with `helper` signing the handshake's CertificateVerify content (the
 * helper checks its shape, hashes it and has the TPM sign); the TPM address is the helper's, not the node's.
 */
export const helperTlsSigner =
  (helper: NodeKeyHelper) =>
  (_address: string | undefined, nodeKey: TpmKeyBlob, certificateChain: readonly Buffer[]): TlsClientSigner => ({
    certificateChain,
    scheme: SCHEME.ecdsaSecp256r1Sha256,
    sign: async (content) => derOfRs(await helper.sign(nodeKey, 'tls', content)),
  });
