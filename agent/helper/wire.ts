import { z } from 'zod';
import { agentErrorClass } from '../errors';

/**
 * The `bcd helper` socket's wire: one request per connection, each way one frame (a 4-byte big-endian length,
 * then that many bytes of JSON). The request set is closed: `sign` (a TLS CertificateVerify, a renewal's proof of
 * possession or an x509pop re-join proof, each message checked for its shape) and `next-key` (a new node key made
 * in the TPM, its CSR signed there, and with an AK the TPM2_Certify of it; without one, also a software identity's
 * move into the TPM). Anything else is refused.
 */
export const HELPER_WIRE_VERSION = 1;

/** The largest request frame: two key blobs and a message fit in a few KiB. */
export const MAX_REQUEST_BYTES = 16 * 1024;
/** The largest answer frame the client accepts (a CSR and a key attestation). */
export const MAX_ANSWER_BYTES = 64 * 1024;

const base64 = (max: number) =>
  z
    .string()
    .max(Math.ceil(max / 3) * 4)
    .regex(/^[A-Za-z0-9+/]*={0,2}$/);

/** A TPM key blob as `node.key` holds it (agent/tpm/keys.ts): public area and the TPM-wrapped private area. */
const keyBlob = z.strictObject({ public: base64(1024).min(4), private: base64(1024).min(4) });

const SIGN_PURPOSES = ['tls', 'renew-pop', 'x509pop'] as const;
export type SignPurpose = (typeof SIGN_PURPOSES)[number];

export const helperRequestSchema = z.discriminatedUnion('op', [
  z.strictObject({
    v: z.literal(HELPER_WIRE_VERSION),
    op: z.literal('sign'),
    purpose: z.enum(SIGN_PURPOSES),
    key: keyBlob,
    message: base64(512).min(4),
  }),
  z.strictObject({
    v: z.literal(HELPER_WIRE_VERSION),
    op: z.literal('next-key'),
    /** The current leaf's `urn:bc:tpm-ak:` statement and the AK's blob (ak.key), or both null (no AK). */
    akStatement: z
      .string()
      .max(200)
      .regex(/^urn:bc:tpm-ak:sha(256|384|512):[0-9a-f]{64,128}$/)
      .nullable(),
    ak: keyBlob.nullable(),
  }),
]);
export type HelperRequest = z.infer<typeof helperRequestSchema>;

export const signAnswerSchema = z.strictObject({ ok: z.literal(true), r: base64(32), s: base64(32) });
export const nextKeyAnswerSchema = z.strictObject({
  ok: z.literal(true),
  key: keyBlob,
  csr: base64(4096),
  keyAttestation: z
    .strictObject({ akPublic: base64(1024), nodeKeyPublic: base64(1024), certifyInfo: base64(1024), certifySignature: base64(1024) })
    .nullable(),
});
export const errorAnswerSchema = z.strictObject({
  ok: z.literal(false),
  error: z.enum(['refused', 'failed']),
  message: z.string().max(500),
});

const TLS_CONTEXT = Buffer.concat([Buffer.alloc(64, 0x20), Buffer.from('TLS 1.3, client CertificateVerify\0', 'ascii')]);
const RENEW_POP = /^renew-pop\n[0-9a-f]{64}\n[A-Za-z0-9_-]{1,64}\n\d{1,12}$/;
const X509POP = /^bc-x509pop-rejoin-v1\n[A-Za-z0-9_-]{16,128}\n[0-9a-f]{64}$/;

/**
 * Whether `message` has the shape of what `purpose` signs: a client CertificateVerify's content over a SHA-256 or
 * SHA-384 transcript hash, protocol/renew-wire.ts's `renewPopMessage`, or protocol/x509pop-wire.ts's proof message.
 * The helper signs nothing else with the node key.
 */
export function isSignableMessage(purpose: SignPurpose, message: Buffer): boolean {
  if (purpose === 'tls') {
    const hashLength = message.length - TLS_CONTEXT.length;
    return (hashLength === 32 || hashLength === 48) && message.subarray(0, TLS_CONTEXT.length).equals(TLS_CONTEXT);
  }
  const text = message.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(message)) return false;
  return purpose === 'renew-pop' ? RENEW_POP.test(text) : X509POP.test(text);
}

/** One frame: the 4-byte big-endian length, then the JSON. */
export function encodeFrame(value: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(value), 'utf8');
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length);
  return Buffer.concat([head, body]);
}

/**
 * Reads one frame from chunks as they arrive: `push` returns the body once it is whole, or throws when the
 * announced length is over `max` (before any of the body is buffered) or more bytes follow the frame.
 */
export class FrameReader {
  private buffered = Buffer.alloc(0);
  constructor(private readonly max: number) {}

  push(chunk: Buffer): Buffer | null {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    if (this.buffered.length < 4) return null;
    const length = this.buffered.readUInt32BE(0);
    if (length > this.max) throw new FrameError(`a frame of ${length} bytes is over the limit of ${this.max}`);
    if (this.buffered.length > 4 + length) throw new FrameError('bytes after the frame');
    return this.buffered.length === 4 + length ? this.buffered.subarray(4) : null;
  }
}

export class FrameError extends agentErrorClass('PROTOCOL', 'FrameError') {}
