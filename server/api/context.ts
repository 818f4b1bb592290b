import type { Db } from '../db/client';
import { DomainError } from '../errors';
import { authenticateApiKey } from '../api-keys/api-keys';
import { loadOperatorPrincipal } from '../operators/operators';
import type { ApiContext } from './trpc';

/**
 * Builds the API context of a request: an `Authorization: Bearer` API key, else the console session's
 * operator. A bearer that is not a live key is refused outright rather than treated as anonymous.
 */
export async function createApiContext(
  db: Db,
  headers: Headers,
  sessionOperatorId: () => Promise<string | null>,
): Promise<ApiContext> {
  const authorization = headers.get('authorization');
  if (authorization) {
    const [scheme, value] = authorization.split(' ', 2);
    const principal = scheme?.toLowerCase() === 'bearer' && value ? await authenticateApiKey(db, value.trim()) : null;
    if (!principal) return { db, principal: null, authError: new DomainError('UNAUTHENTICATED', 'The API key is not valid (revoked, mistyped or not an API key)') };
    return { db, principal };
  }
  const operatorId = await sessionOperatorId();
  return { db, principal: operatorId ? await loadOperatorPrincipal(db, operatorId) : null };
}
