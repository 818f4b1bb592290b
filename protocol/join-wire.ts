import type { HardwareClaims } from './hardware-claims';

/** The largest Join body read; a real one is about 2 KiB. */
export const MAX_JOIN_BODY_BYTES = 64 * 1024;

/** The fields of a Join body every attestor shares; each attestor reads its own (`sealedToken`, `attestation`) from `body`. */
export interface JoinRequestBody {
  body: Readonly<Record<string, unknown>>;
  csr: Buffer;
  claims: HardwareClaims;
  /** The default attestor (`join-token`) for the empty string, as protocol.md says. */
  attestor: string;
  role: string;
}

/**
 * The attestors protocol.md names (metric labels). A join naming anything else is malformed unless the server
 * registered an attestor of that name (server/join/attestors), so events and rate-limit keys stay bounded.
 */
export const KNOWN_ATTESTORS = ['join-token', 'discovery', 'tpm', 'x509pop'] as const;

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
