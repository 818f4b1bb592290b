import type { Db } from '../db/client';
import { hitRateLimit, secondsLeftInWindow } from '../db/rate-limits';
import type { Principal } from '../authz/principal';
import { HttpRefusal } from './body';
import { logError } from '../log';

/** CSV exports one caller (operator or API key) may start per window, every instance together. */
export const CSV_EXPORTS_PER_CALLER = 30;
const EXPORT_WINDOW_SECONDS = 600;

/** A refusal that tells the client how long to wait (`retry-after`). */
export class ExportRateLimited extends HttpRefusal {
  constructor(readonly retryAfterSeconds: number) {
    super(429, `Too many CSV exports; try again in ${retryAfterSeconds} s`);
  }
}

/**
 * Counts one export against its caller in the shared `rate_limits` table (`rate_limit_hit`), so every API instance
 * together allows CSV_EXPORTS_PER_CALLER per ten minutes: an export reads up to a whole fleet or audit log.
 */
export async function hitExportLimit(db: Db, principal: Principal): Promise<void> {
  const key = `csv-export:${principal.actor}`;
  if (await hitRateLimit(db, key, CSV_EXPORTS_PER_CALLER, EXPORT_WINDOW_SECONDS)) return;
  // A refused hit leaves its window as it was: what is left of it is how long to wait.
  const left = (await secondsLeftInWindow(db, key, EXPORT_WINDOW_SECONDS)) ?? EXPORT_WINDOW_SECONDS;
  throw new ExportRateLimited(Math.min(EXPORT_WINDOW_SECONDS, left));
}

/** How many exports of one kind stream at once from this process; another is answered 429 until one ends. */
export class InFlight {
  private count = 0;
  constructor(
    readonly limit: number,
    private readonly what: string,
  ) {}

  /** Takes a slot (429 when none is free); the function it returns gives it back, once. */
  take(): () => void {
    if (this.count >= this.limit) throw new HttpRefusal(429, `Too many ${this.what} are running; try again in a minute`);
    this.count++;
    let released = false;
    return () => {
      if (!released) this.count--;
      released = true;
    };
  }
}

/**
 * A streamed CSV answer: one chunk of `rows` per pull (the generator reads a batch of rows per chunk), so the
 * memory an export holds is one batch whatever its length. HEAD answers the headers and reads nothing. A failure
 * while streaming cuts the response (the file then lacks its end).
 */
export function csvResponse(
  request: Request,
  rows: AsyncGenerator<string>,
  options: { filename: string; headers?: Record<string, string>; slots: InFlight; what: string },
): Response {
  const headers = {
    'content-type': 'text/csv; charset=utf-8',
    'content-disposition': `attachment; filename="${options.filename}"`,
    'cache-control': 'no-store',
    ...options.headers,
  };
  if (request.method === 'HEAD') {
    void rows.return(undefined);
    return new Response(null, { status: 200, headers });
  }
  const release = options.slots.take();
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await rows.next();
          if (next.done) {
            release();
            controller.close();
          } else controller.enqueue(encoder.encode(next.value));
        } catch (error) {
          release();
          logError(`${options.what} failed while streaming`, error);
          controller.error(error);
        }
      },
      async cancel() {
        release();
        await rows.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status: 200, headers });
}
