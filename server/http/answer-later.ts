import type http from 'node:http';

/**
 * A "not now" answer in the error model with the seconds to wait in `retry-after`: 429 when the caller went past
 * its own limit, 503 when the server is busy whoever asks. Never cached.
 */
export function answerLater(res: http.ServerResponse, status: 429 | 503, retryAfterSeconds: number, message: string) {
  const body = JSON.stringify({ code: 'INVALID_STATE', message });
  res
    .writeHead(status, {
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'retry-after': String(retryAfterSeconds),
      'content-length': Buffer.byteLength(body),
    })
    .end(body);
}

/** 429: the caller's address went past a rate limit; it may retry after `retryAfterSeconds`. */
export const tooManyRequests = (res: http.ServerResponse, retryAfterSeconds: number) =>
  answerLater(res, 429, retryAfterSeconds, `Too many requests from this address; retry after ${retryAfterSeconds} seconds`);
