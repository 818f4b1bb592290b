import type { HardwareClaims } from './hardware-claims';

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

/** The attestors protocol.md names; anything else is malformed, so events and rate-limit keys stay bounded. */
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
