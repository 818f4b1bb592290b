import { decodeBase64url } from '../../protocol/base64url';

/** A refused renewal. `reason` goes to the `security.renew.refused` event; the caller sees only `Renew refused`. */
export class RenewRefusal extends Error {
  constructor(
    readonly reason: string,
    readonly detail: string,
  ) {
    super('Renew refused');
    this.name = 'RenewRefusal';
  }
}

interface RenewRequestBody {
  csr: Buffer;
  leaf: Buffer;
  clientTime: number;
  popSig: Buffer;
  keyAttestation: Record<string, unknown> | null;
}

const B64 = /^[A-Za-z0-9+/]+={0,2}$/;
const b64 = (value: unknown, max: number) =>
  typeof value === 'string' && value.length <= max && B64.test(value) ? Buffer.from(value, 'base64') : null;

/** Parses a Renew body (protocol.md "Renew"); unknown fields are ignored, anything malformed is a refusal. */
export function parseRenewBody(bytes: Buffer | null): RenewRequestBody {
  let raw: unknown;
  try {
    raw = bytes ? JSON.parse(bytes.toString('utf8')) : null;
  } catch {
    throw new RenewRefusal('malformed', 'not JSON');
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new RenewRefusal('malformed', 'body is not an object');
  const body = raw as Record<string, unknown>;
  const csr = b64(body.csr, 8192);
  if (!csr) throw new RenewRefusal('malformed', 'csr');
  const chain = body.chain;
  const leaf = Array.isArray(chain) && chain.length >= 1 && chain.length <= 4 ? b64(chain[0], 16384) : null;
  if (!leaf) throw new RenewRefusal('malformed', 'chain');
  if (typeof body.clientTime !== 'number' || !Number.isSafeInteger(body.clientTime)) throw new RenewRefusal('malformed', 'clientTime');
  const popSig = typeof body.popSig === 'string' ? decodeBase64url(body.popSig) : null;
  if (!popSig || popSig.length !== 64) throw new RenewRefusal('malformed', 'popSig');
  const attestation = body.keyAttestation;
  const keyAttestation =
    typeof attestation === 'object' && attestation !== null && !Array.isArray(attestation) && Object.keys(attestation).length > 0
      ? (attestation as Record<string, unknown>)
      : null;
  return { csr, leaf, clientTime: body.clientTime, popSig, keyAttestation };
}
