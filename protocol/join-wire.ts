import { hardwareClaimsSchema, type HardwareClaims } from './hardware-claims';
import { JoinRefusal } from '../server/join/crypto/refusal';

/** The largest Join body read; a real one is about 2 KiB. */
export const MAX_JOIN_BODY_BYTES = 64 * 1024;

export interface JoinRequestBody {
  sealedToken: string;
  csr: Buffer;
  claims: HardwareClaims;
  /** `join-token` for the empty string, as protocol.md says. */
  attestor: string;
  role: string;
}

const B64 = /^[A-Za-z0-9+/]+={0,2}$/;
const ROLE = /^[a-z][a-z-]{0,31}$/;

/** The attestors protocol.md names; anything else is malformed, so events and rate-limit keys stay bounded. */
export const KNOWN_ATTESTORS = ['join-token', 'discovery', 'tpm', 'x509pop'] as const;

/**
 * Parses a Join body (protocol.md). Unknown fields are ignored; anything malformed is a refusal like any
 * other, so the answer never says which part was wrong.
 */
export function parseJoinBody(raw: unknown): JoinRequestBody {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new JoinRefusal('join:malformed', 'body is not an object');
  const body = raw as Record<string, unknown>;
  const { sealedToken, csr, attestor = '', role = 'node' } = body;
  if (typeof sealedToken !== 'string' || sealedToken.length === 0) throw new JoinRefusal('join:malformed', 'sealedToken');
  if (typeof csr !== 'string' || csr.length > 8192 || !B64.test(csr)) throw new JoinRefusal('join:malformed', 'csr');
  const named = attestor === '' ? 'join-token' : attestor;
  if (typeof named !== 'string' || !(KNOWN_ATTESTORS as readonly string[]).includes(named)) throw new JoinRefusal('join:malformed', 'attestor');
  if (typeof role !== 'string' || !ROLE.test(role)) throw new JoinRefusal('join:malformed', 'role');
  const claims = hardwareClaimsSchema.safeParse(body.claims ?? {});
  if (!claims.success) throw new JoinRefusal('join:malformed', 'claims');
  return {
    sealedToken,
    csr: Buffer.from(csr, 'base64'),
    claims: claims.data,
    attestor: named,
    role,
  };
}

const json = (value: unknown) => Buffer.from(JSON.stringify(value));

/** The answers that are not signed. Every refusal is these exact bytes, whatever the reason. */
export const JOIN_REFUSED = { status: 403, body: json({ code: 'ACCESS_DENIED', message: 'Join refused' }) } as const;
export const JOIN_CONFLICT = { status: 409, body: json({ code: 'CONFLICT', message: 'This machine joined concurrently; retry' }) } as const;
export const JOIN_FAILED = { status: 500, body: json({ code: 'INTERNAL', message: 'Internal error; retry' }) } as const;
export const joinNotConfigured = (message: string) => ({ status: 503, body: json({ code: 'INVALID_CONFIG', message }) });

export interface JoinAnswer {
  status: number;
  body: Buffer;
}
