import type { Db } from '../db/client';
import { DomainError } from '../../protocol/errors';
import { authenticateApiKey } from '../api-keys/api-keys';
import { loadSessionPrincipal, type SessionClaim } from '../operators/operators';
import type { ApiContext, ApiServices } from './trpc';
import { notePrincipal } from '../metrics/request-log';
import { clientAddressFromHeaders } from '../http/client-address';
import { createPkiSurface } from '../provisioning/pki-surface';

/** What a request's API context is built from: what the route handlers hand the API (server/boot wires them). */
export interface ApiDeps {
  db: Db;
  /** The console session's claim (operator and session version), unchecked; the context checks it. */
  sessionOperatorId: () => Promise<SessionClaim | null>;
  /** The process's services (server/boot/services.ts). */
  services?: ApiServices;
}

/**
 * Builds the API context of a request: an `Authorization: Bearer` API key, else the console session's
 * operator (whose session version must still be current). A bearer that is not a live key is refused outright rather than treated as anonymous.
 */
export async function createApiContext(
  db: Db,
  headers: Headers,
  sessionOperatorId: () => Promise<SessionClaim | null>,
  services?: ApiServices,
): Promise<ApiContext> {
  const clientAddress = clientAddressFromHeaders(headers);
  const pki = createPkiSurface(db);
  const authorization = headers.get('authorization');
  if (authorization) {
    const [scheme, value] = authorization.split(' ', 2);
    const principal = scheme?.toLowerCase() === 'bearer' && value ? await authenticateApiKey(db, value.trim()) : null;
    if (!principal)
      return {
        db,
        clientAddress,
        principal: null,
        authError: new DomainError('UNAUTHENTICATED', 'The API key is not valid (revoked, mistyped or not an API key)'),
      };
    notePrincipal(principal.actor);
    // A live stream decides its caller again while it runs (server/api/live-streams.ts).
    return { db, services, clientAddress, pki, principal, reauthenticate: () => authenticateApiKey(db, value!.trim()) };
  }
  const claim = await sessionOperatorId();
  const principal = claim ? await loadSessionPrincipal(db, claim) : null;
  notePrincipal(principal?.actor);
  return principal && claim
    ? { db, services, clientAddress, pki, principal, reauthenticate: () => loadSessionPrincipal(db, claim) }
    : { db, services, clientAddress, pki, principal: null };
}
