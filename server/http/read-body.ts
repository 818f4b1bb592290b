import type http from 'node:http';

/** Reads a request body up to `limit` bytes; null when it is larger (the rest is drained). */
export function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > limit ? null : Buffer.concat(chunks)));
    req.on('error', reject);
    // A client that goes away mid-body ends the request without 'end' or, on some Node versions, 'error'.
    req.on('close', () => {
      if (!req.complete) reject(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }));
    });
  });
}
