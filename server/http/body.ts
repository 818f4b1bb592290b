import type http from 'node:http';
import { DomainError } from '../../protocol/errors';

/**
 * The one body reader of every route that reads a body (the agent endpoints, REST, tRPC, the gateway):
 * a size cap counted as the bytes arrive, so an oversized body is never held in memory, the JSON
 * content-type rule, and the 413 and 415 refusals in the error model.
 */

/** The default cap of an API request body; a REST route may set its own (`RestRoute.maxBodyBytes`). */
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

/** A refusal that answers with an HTTP status outside the domain error table (413, 415). */
export class HttpRefusal extends DomainError {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super('INVALID_ARGUMENT', message);
  }
}

const bodyTooLarge = (limit: number) => new HttpRefusal(413, `The request body is larger than ${limit} bytes`);

/**
 * True only for the media type `application/json`, optionally with a `charset` parameter. A prefix test
 * would let `application/json-seq` through, and every type a cross-site form can send (text/plain,
 * multipart/form-data, application/x-www-form-urlencoded) must stay out: a JSON body is what forces a
 * browser to preflight a cross-origin request.
 */
export function isJsonContentType(value: string | null | undefined): boolean {
  if (!value) return false;
  const [type, ...params] = value.split(';').map((part) => part.trim().toLowerCase());
  if (type !== 'application/json') return false;
  return params.every((param) => param === '' || /^charset="?utf-8"?$/.test(param));
}

/** 415 unless the request says its body is JSON (isJsonContentType). */
export function requireJsonContentType(value: string | null | undefined, message: string): void {
  if (!isJsonContentType(value)) throw new HttpRefusal(415, message);
}

/** Chunks kept up to `limit` bytes; past it, only counted. */
class CappedChunks {
  private readonly chunks: Uint8Array[] = [];
  private size = 0;
  constructor(private readonly limit: number) {}
  /** Keeps `chunk`; false once the body has passed the limit (and nothing more is kept). */
  add(chunk: Uint8Array): boolean {
    this.size += chunk.length;
    if (this.size > this.limit) return false;
    this.chunks.push(chunk);
    return true;
  }
  get isOver() {
    return this.size > this.limit;
  }
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

/**
 * A Node request's body up to `limit` bytes; null when it is larger. The rest of an oversized body is read
 * and dropped (never kept), so the answer goes out on a connection that can be reused. A client that goes
 * away mid-body rejects with an error isClientAbort recognises.
 */
export function readNodeBody(req: http.IncomingMessage, limit: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const kept = new CappedChunks(limit);
    req.on('data', (chunk: Buffer) => void kept.add(chunk));
    req.on('end', () => resolve(kept.isOver ? null : kept.bytes()));
    req.on('error', reject);
    // A client that goes away mid-body ends the request without 'end' or, on some Node versions, 'error'.
    req.on('close', () => {
      if (!req.complete) reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    });
  });
}

/**
 * A web Request's body up to `limit` bytes; null when it declares or streams more. Reading stops at the
 * limit (the stream is cancelled), and a declared length over it is refused before a byte is read.
 */
async function readRequestBody(request: Request, limit: number): Promise<Buffer | null> {
  if (Number(request.headers.get('content-length') ?? 0) > limit) return null;
  if (!request.body) return Buffer.alloc(0);
  const kept = new CappedChunks(limit);
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!kept.add(value)) {
      await reader.cancel().catch(() => {});
      return null;
    }
  }
  return kept.bytes();
}

/** A web Request's body as text, refused with 413 (bodyTooLarge) past `limit` bytes, as readRequestBody reads it. */
export async function readRequestText(request: Request, limit: number): Promise<string> {
  const body = await readRequestBody(request, limit);
  if (body === null) throw bodyTooLarge(limit);
  return body.toString('utf8');
}
