import { initTRPC, TRPCError } from '@trpc/server';
import { ZodError } from 'zod';
import type { Db } from '../db/client';
import type { Principal } from '../authz/principal';
import type { PkiSurface } from '../provisioning/pki-surface';
import type { EventsListener } from '../events/listener';
import type { JoinRequestListener } from '../requests/listener';
import { ROLE_ACTIONS, type Action } from '../../protocol/api/permissions';
import { DomainError } from '../../protocol/errors';
import { ERROR_MAP } from '../error-map';
import { logError } from '../log';
import { liveStreamLimits } from './live-streams';

/**
 * What procedures take from the process's services (server/boot/services.ts builds them, one set per process):
 * handed in with every request through the context, never fetched.
 */
export interface ApiServices {
  /** The process's LISTEN on `compute_events` (`events.onChange`). */
  eventsListener(): EventsListener;
  /** The process's LISTEN on the join-request channel (`joinRequests.onChange`). */
  joinRequestListener(): JoinRequestListener;
}

export interface ApiContext {
  db: Db;
  principal: Principal | null;
  /** Why the request carries no principal although it tried (an invalid API key). */
  authError?: DomainError;
  /** Decides the request's caller again, fresh from PostgreSQL (null once it has ended); for live streams. */
  reauthenticate?: () => Promise<Principal | null>;
  /** The client address the boot server decided on (server/http/client-address.ts); throttles key on it. */
  clientAddress?: string;
  /** The PKI surface modules mint machine tokens through (`ctx.pki.issueJoinToken`); built with the context. */
  pki?: PkiSurface;
  /**
   * The process's services, handed in with every request (server/boot). Only live streams read them, and they
   * require them (`streamProcedure`): a test that builds a context for a stream hands in its own.
   */
  services?: ApiServices;
}

export interface ApiMeta {
  /** The action the procedure is decided as, for documentation and the early role check. */
  action?: Action;
  /** Open to a session signed in with a one-time password, which may do nothing else (choose a new one). */
  beforePasswordChange?: boolean;
}

/** Maps a thrown value onto the one error model: domain errors keep their code, zod errors name the field. */
export function toDomainError(error: unknown): DomainError | null {
  const cause = error instanceof TRPCError ? error.cause : error;
  if (cause instanceof DomainError) return cause;
  // A ZodError is the caller's bad input only when tRPC rejected the input (BAD_REQUEST); an output that
  // fails its schema is our bug and stays an internal error.
  const isInput = !(error instanceof TRPCError) || error.code === 'BAD_REQUEST';
  if (cause instanceof ZodError && isInput) {
    const issue = cause.issues[0];
    // zod reports an unknown key on the object that holds it. Nested, that object is the field (`expect`);
    // at the top level there is no such field, so the unknown key itself is named.
    const path = issue?.code === 'unrecognized_keys' && issue.path.length === 0 ? [issue.keys[0]!] : (issue?.path ?? []);
    const field = path.join('.') || undefined;
    return new DomainError('INVALID_ARGUMENT', field ? `${field}: ${issue!.message}` : (issue?.message ?? 'Invalid input'), { field });
  }
  return null;
}

const t = initTRPC
  .context<ApiContext>()
  .meta<ApiMeta>()
  .create({
    // A live stream's longest life: the server then closes it, the client reconnects and is decided afresh.
    sse: { maxDurationMs: liveStreamLimits().maxLifetimeMs },
    errorFormatter({ shape, error }) {
      const domain = toDomainError(error);
      if (!domain && error.code === 'INTERNAL_SERVER_ERROR') {
        return { ...shape, message: 'Internal error', data: { ...shape.data, stack: undefined, code: 'INTERNAL' } };
      }
      return {
        ...shape,
        message: domain?.message ?? shape.message,
        data: { ...shape.data, stack: undefined, domainCode: domain?.code ?? null, field: domain?.field ?? null },
      };
    },
  });

/** A domain error as the TRPCError of its code in the error table; anything else is logged, never echoed. */
function mappedError(error: unknown, path: string): unknown {
  const domain = toDomainError(error);
  if (domain) return new TRPCError({ code: ERROR_MAP[domain.code].trpc, message: domain.message, cause: domain });
  if (!(error instanceof TRPCError) || error.code === 'INTERNAL_SERVER_ERROR')
    logError(`procedure ${path} failed`, error instanceof TRPCError ? (error.cause ?? error) : error);
  return error;
}

/**
 * A subscription's errors are thrown while its stream runs, after the middleware returned: they go through
 * the same table, so a NOT_FOUND arrives as NOT_FOUND rather than INTERNAL_SERVER_ERROR.
 */
async function* mapStreamErrors(source: AsyncIterable<unknown>, path: string): AsyncGenerator<unknown> {
  try {
    yield* source;
  } catch (error) {
    throw mappedError(error, path);
  }
}

const isAsyncIterable = (value: unknown): value is AsyncIterable<unknown> =>
  typeof value === 'object' && value !== null && Symbol.asyncIterator in value;

/** Turns domain errors into TRPCErrors with the mapped code; unknown errors are logged, never echoed. */
const errorMapping = t.middleware(async ({ next, path, type }) => {
  const result = await next();
  if (!result.ok) {
    const domain = toDomainError(result.error);
    if (domain) {
      throw new TRPCError({ code: ERROR_MAP[domain.code].trpc, message: domain.message, cause: domain });
    }
    if (result.error.code === 'INTERNAL_SERVER_ERROR') logError(`procedure ${path} failed`, result.error.cause ?? result.error);
  } else if (type === 'subscription' && isAsyncIterable(result.data)) {
    return { ...result, data: mapStreamErrors(result.data, path) } as typeof result;
  }
  return result;
});

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

export const publicProcedure = t.procedure.use(errorMapping);

export const authenticatedProcedure = publicProcedure.use(({ ctx, meta, next }) => {
  if (!ctx.principal) throw ctx.authError ?? new DomainError('UNAUTHENTICATED', 'Sign in, or send an API key as Authorization: Bearer');
  // A printed password is one-time: until its owner chose a new one, the session can do nothing else.
  if (ctx.principal.passwordChangeRequired && !meta?.beforePasswordChange) {
    throw new DomainError('ACCESS_DENIED', 'Choose a new password first: the one-time password you signed in with allows nothing else');
  }
  return next({ ctx: { ...ctx, principal: ctx.principal } });
});

/**
 * A procedure decided as `action`. The early check refuses a caller none of whose roles allows the action
 * at all; the domain function then decides the action on the concrete resource (owner tenant, NOT_FOUND
 * across tenants), so authorization never depends on the router alone.
 */
export function requirePermission(action: Action) {
  return authenticatedProcedure.meta({ action }).use(({ ctx, next }) => {
    const roles = [...ctx.principal.memberships.values()];
    if (!roles.some((role) => ROLE_ACTIONS[role].has(action))) {
      throw new DomainError('ACCESS_DENIED', `Your role (${roles.join(', ') || 'none'}) does not allow ${action}`);
    }
    return next();
  });
}

/** A subscription decided as `action` that reads the process's listeners: its context must carry the services. */
export function streamProcedure(action: Action) {
  return requirePermission(action).use(({ ctx, next }) => {
    if (!ctx.services) throw new Error('A live stream needs the process services in its API context (server/boot hands them in)');
    return next({ ctx: { services: ctx.services } });
  });
}
