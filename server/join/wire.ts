import { hardwareClaimsSchema, type HardwareClaims } from './hardware/claims';
import { JoinRefusal } from './crypto/refusal';
import { DEFAULT_ATTESTOR, PROTOCOL_ATTESTORS } from './attestors/names';
import { isKnownAttestor } from './attestors';

/** The largest Join body read; a real one is about 2 KiB. */
export const MAX_JOIN_BODY_BYTES = 64 * 1024;

export interface JoinRequestBody {
  /** The whole body: each attestor reads its own fields (`sealedToken`, `attestation`) from it. */
  body: Readonly<Record<string, unknown>>;
  csr: Buffer;
  claims: HardwareClaims;
  /** The default attestor (`join-token`) for the empty string, as protocol.md says. */
  attestor: string;
  role: string;
}

const B64 = /^[A-Za-z0-9+/]+={0,2}$/;
const ROLE = /^[a-z][a-z-]{0,31}$/;

/** The attestors protocol.md names (metric labels); a join may also name a registered one (isKnownAttestor). */
export const KNOWN_ATTESTORS = PROTOCOL_ATTESTORS;

/**
 * Parses the fields of a Join body every attestor shares (protocol.md); the attestor parses its own.
 * Unknown fields are ignored; anything malformed is a refusal like any other, so the answer never says
 * which part was wrong.
 */
export function parseJoinBody(raw: unknown): JoinRequestBody {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new JoinRefusal('join:malformed', 'body is not an object');
  const body = raw as Record<string, unknown>;
  const { csr, attestor = '', role = 'node' } = body;
  if (typeof csr !== 'string' || csr.length > 8192 || !B64.test(csr)) throw new JoinRefusal('join:malformed', 'csr');
  const named = attestor === '' ? DEFAULT_ATTESTOR : attestor;
  if (typeof named !== 'string' || !isKnownAttestor(named)) throw new JoinRefusal('join:malformed', 'attestor');
  if (typeof role !== 'string' || !ROLE.test(role)) throw new JoinRefusal('join:malformed', 'role');
  const claims = hardwareClaimsSchema.safeParse(body.claims ?? {});
  if (!claims.success) throw new JoinRefusal('join:malformed', 'claims');
  return {
    body,
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
