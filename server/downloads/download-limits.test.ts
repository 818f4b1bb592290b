import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBootServer } from '../boot/http-server';
import { createServices, type Services } from '../boot/services';
import type { RequestLimitOverrides } from '../http/request-limits';
import { testDatabaseUrl } from '../../test/db';

// Large enough that a client that does not read leaves the server's writes waiting (socket buffers are far smaller).
const BIG = 32 * 1024 * 1024;
let dir: string;
const opened: Array<{ server: http.Server; services: Services }> = [];

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'download-limits-'));
  mkdirSync(path.join(dir, '1.2.3'));
  writeFileSync(path.join(dir, '1.2.3', 'linux-amd64'), randomBytes(1000));
  writeFileSync(path.join(dir, '1.2.3', 'linux-arm64'), Buffer.alloc(BIG, 7));
});
afterAll(async () => {
  for (const { server, services } of opened) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await services.close();
  }
});

/** A boot server (the production one) over the test database, with download limits of its own. */
async function startServer(downloads: RequestLimitOverrides['downloads']) {
  const services = createServices({ databaseUrl: testDatabaseUrl(), endpointLimits: { downloads }, pgPoolMax: 4 });
  const server = createBootServer({ ...services, downloadsDir: () => dir }, () => async (_req, res) => void res.writeHead(418).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  opened.push({ server, services });
  return { services, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/compute/downloads/bcd/1.2.3` };
}

/** Starts a download of the big file and reads only its headers: the server's writes then wait on the client. */
function stalledDownload(url: string) {
  return new Promise<{ status: number; request: http.ClientRequest; response: http.IncomingMessage }>((resolve, reject) => {
    const request = http.get(`${url}/linux-arm64`, { agent: false }, (response) => {
      response.pause();
      resolve({ status: response.statusCode ?? 0, request, response });
    });
    request.on('error', reject);
  });
}

describe('bcd download limits', () => {
  it('allows exactly the per-address limit across two instances, then 429 with retry-after', async () => {
    const rule = { keyPrefix: `dl-flood-${randomUUID()}`, limit: 12, windowSeconds: 600 };
    const [a, b] = [await startServer(rule), await startServer(rule)];
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => fetch(`${(i % 2 ? a : b).url}/linux-amd64`, { method: i % 3 ? 'GET' : 'HEAD' })),
    );
    const statuses = await Promise.all(answers.map(async (r) => (await r.arrayBuffer(), r.status)));
    expect(statuses.filter((s) => s === 200)).toHaveLength(12);
    expect(statuses.filter((s) => s === 429)).toHaveLength(28);
    const refused = answers.find((r) => r.status === 429)!;
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(600);
    // Refused again on either instance, also once this process remembers the address.
    for (const server of [a, b]) expect((await fetch(`${server.url}/linux-amd64`)).status).toBe(429);
  });

  it('streams at most maxConcurrent downloads at once per process and answers 503 with retry-after past it', async () => {
    const server = await startServer({ keyPrefix: `dl-cap-${randomUUID()}`, limit: 1000, maxConcurrent: 2, idleMs: 60_000 });
    const held = [await stalledDownload(server.url), await stalledDownload(server.url)];
    expect(held.map((h) => h.status)).toEqual([200, 200]);
    const busy = await fetch(`${server.url}/linux-amd64`);
    expect(busy.status).toBe(503);
    expect(busy.headers.get('retry-after')).toBeTruthy();
    expect(await busy.json()).toMatchObject({ code: 'INVALID_STATE' });
    // A slot frees when its download ends.
    held[0]!.request.destroy();
    await expect.poll(() => server.services.endpointLimits.downloads.inFlight).toBe(1);
    expect((await fetch(`${server.url}/linux-amd64`)).status).toBe(200);
    held[1]!.request.destroy();
  });

  it('closes a download whose client stops reading, and frees its slot', async () => {
    const server = await startServer({ keyPrefix: `dl-idle-${randomUUID()}`, limit: 1000, maxConcurrent: 1, idleMs: 500 });
    const stalled = await stalledDownload(server.url);
    expect(stalled.status).toBe(200);
    await expect.poll(() => server.services.endpointLimits.downloads.inFlight, { timeout: 15_000 }).toBe(0);
    expect((await fetch(`${server.url}/linux-amd64`)).status).toBe(200);
    // What the client gets when it reads again is a cut-off body, not the file.
    let received = 0;
    const ended = await new Promise<'complete' | 'cut off'>((resolve) => {
      stalled.response.on('data', (chunk: Buffer) => (received += chunk.length));
      stalled.response.on('end', () => resolve(stalled.response.complete ? 'complete' : 'cut off'));
      stalled.response.on('error', () => resolve('cut off'));
      stalled.response.on('aborted', () => resolve('cut off'));
      stalled.response.resume();
    });
    expect(ended).toBe('cut off');
    expect(received).toBeLessThan(BIG);
  });
});
