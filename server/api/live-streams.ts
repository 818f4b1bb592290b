import type { Principal } from '../authz/principal';
import { DomainError } from '../../protocol/errors';
import { wholeNumberSetting } from '../http/whole-number-setting';
import type { ApiContext, ApiServices } from './trpc';

/**
 * Bounds of a live stream (a tRPC subscription over server-sent events), from the environment:
 *
 * - `BETTER_COMPUTE_STREAM_RECHECK_SECONDS` (1 to 30, default 30): how often an open stream decides its
 *   caller again (API key live, session version current, membership and role still there). A delivery
 *   also waits for a check when the last one is older than the cache (5 s, or the recheck interval when
 *   shorter), so a revoked caller gets nothing after that.
 * - `BETTER_COMPUTE_STREAM_MAX_SECONDS` (1 to 86,400, default 3,600): a stream's longest life; the server
 *   then closes it and the client reconnects, deciding everything afresh.
 * - `BETTER_COMPUTE_STREAMS_PER_PRINCIPAL` (1 to 1,000, default 16): open streams per caller (operator or
 *   API key) and server process; one more is refused with INVALID_STATE.
 */
interface LiveStreamLimits {
  recheckMs: number;
  cacheMs: number;
  maxLifetimeMs: number;
  perPrincipal: number;
}

/** The limits the environment sets; throws INVALID_CONFIG for a value out of range (checked at start). */
export function liveStreamLimits(env: Record<string, string | undefined> = process.env): LiveStreamLimits {
  const recheckMs = wholeNumberSetting(env, 'BETTER_COMPUTE_STREAM_RECHECK_SECONDS', 1, 30, 30) * 1000;
  return {
    recheckMs,
    cacheMs: Math.min(5_000, recheckMs),
    maxLifetimeMs: wholeNumberSetting(env, 'BETTER_COMPUTE_STREAM_MAX_SECONDS', 1, 86_400, 3_600) * 1000,
    perPrincipal: wholeNumberSetting(env, 'BETTER_COMPUTE_STREAMS_PER_PRINCIPAL', 1, 1_000, 16),
  };
}

// Open streams per caller in this process. Per process, not shared: a caller can hold the limit on each
// instance, which bounds one caller's share of a process, the resource the limit protects.
const openStreams = new Map<string, number>();

/**
 * The context of a request that reads a live stream: the caller as the request decided it, how to decide it
 * afresh (null: the key or session has ended; absent for in-process callers), and the process's listeners,
 * which a stream must have (`streamProcedure`, server/api/trpc.ts).
 */
type StreamContext = Pick<ApiContext, 'reauthenticate'> & { principal: Principal; services: ApiServices };

interface GuardedStreamOptions<S, T> {
  ctx: StreamContext;
  /** Decides the subscription for a principal and answers its scope; throws the domain error that refuses it. */
  authorize: (principal: Principal) => Promise<S>;
  /** The stream itself, read from the process's listeners, for the scope; it must end when `signal` aborts. */
  open: (listeners: ApiServices, scope: S, signal: AbortSignal) => AsyncIterable<T>;
  signal: AbortSignal | undefined;
  limits?: LiveStreamLimits;
}

/**
 * A live stream that keeps deciding its caller: before a delivery (at most `cacheMs` after the last check)
 * and every `recheckMs`, the principal is authenticated again and the subscription authorized again with
 * it. When that fails the stream ends with the refusal's domain error (UNAUTHENTICATED for a revoked key or
 * an ended session, NOT_FOUND or ACCESS_DENIED for a membership or role taken away), which the procedure
 * ladder maps through the error table. The lifetime cap is tRPC's `sse.maxDurationMs` (server/api/trpc.ts).
 */
export async function* guardedStream<S, T>(options: GuardedStreamOptions<S, T>): AsyncGenerator<T> {
  const limits = options.limits ?? liveStreamLimits();
  const { principal, reauthenticate, services } = options.ctx;
  const key = `${principal.kind}:${principal.id}`;
  const held = openStreams.get(key) ?? 0;
  if (held >= limits.perPrincipal) {
    throw new DomainError(
      'INVALID_STATE',
      `Too many live streams: ${limits.perPrincipal} at most per caller; close another console tab or watch first`,
    );
  }
  openStreams.set(key, held + 1);
  const inner = new AbortController();
  const stop = () => inner.abort();
  options.signal?.addEventListener('abort', stop, { once: true });
  if (options.signal?.aborted) stop();
  // Set by the timer's callback, so the declared type must not narrow to `null` here.
  let failure = null as Error | null;
  let checkedAt = Date.now();
  const check = async () => {
    const fresh = reauthenticate ? await reauthenticate() : principal;
    if (!fresh) throw new DomainError('UNAUTHENTICATED', 'The session or API key of this stream has ended');
    if (fresh.passwordChangeRequired) throw new DomainError('ACCESS_DENIED', 'Choose a new password first');
    await options.authorize(fresh);
    checkedAt = Date.now();
  };
  const timer = setInterval(() => {
    check().catch((error: unknown) => {
      failure ??= error instanceof Error ? error : new Error(String(error));
      inner.abort();
    });
  }, limits.recheckMs);
  try {
    const scope = await options.authorize(principal);
    for await (const item of options.open(services, scope, inner.signal)) {
      if (failure) break;
      if (Date.now() - checkedAt >= limits.cacheMs) await check();
      yield item;
    }
    if (failure) throw failure;
  } finally {
    clearInterval(timer);
    options.signal?.removeEventListener('abort', stop);
    inner.abort();
    const now = (openStreams.get(key) ?? 1) - 1;
    if (now > 0) openStreams.set(key, now);
    else openStreams.delete(key);
  }
}
