import { createHash } from 'node:crypto';
import { mkdtempSync, mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBootServer } from '../boot/http-server';
import { createServices } from '../boot/services';

const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 251));
const digest = createHash('sha256').update(bytes).digest('hex');
const manifest = '{"payload":"e30=","signature":"AA==","publicKey":"AA=="}\n';
let server: http.Server;
let base: string;
let previous: string | undefined;

beforeAll(async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'downloads-'));
  mkdirSync(path.join(dir, '1.2.3'));
  writeFileSync(path.join(dir, '1.2.3', 'linux-amd64'), bytes);
  writeFileSync(path.join(dir, '1.2.3', 'linux-s390x'), bytes); // present, but not an arch we serve
  writeFileSync(path.join(dir, '1.2.3', 'release-manifest.json'), manifest);
  previous = process.env.BETTER_COMPUTE_DOWNLOADS_DIR;
  process.env.BETTER_COMPUTE_DOWNLOADS_DIR = dir;
  // The production boot server; a "Next" that would answer anything else with 418 proves it never sees downloads.
  server = createBootServer(
    createServices({ databaseUrl: 'postgresql://127.0.0.1:1/unused' }),
    () => async (_req, res) => void res.writeHead(418).end(),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/compute/downloads/bcd`;
});
afterAll(async () => {
  if (previous === undefined) delete process.env.BETTER_COMPUTE_DOWNLOADS_DIR;
  else process.env.BETTER_COMPUTE_DOWNLOADS_DIR = previous;
  await new Promise((resolve) => server.close(resolve));
});

describe('GET /api/compute/downloads/bcd/{version}/linux-{arch}', () => {
  it('serves the bytes with Content-Length and a strong ETag that is their SHA-256', async () => {
    const response = await fetch(`${base}/1.2.3/linux-amd64`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe('1000');
    expect(response.headers.get('etag')).toBe(`"sha256-${digest}"`);
    expect(response.headers.get('accept-ranges')).toBe('bytes');
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('answers HEAD with the length and no body, and a matching If-None-Match with 304', async () => {
    const head = await fetch(`${base}/1.2.3/linux-amd64`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('1000');
    const again = await fetch(`${base}/1.2.3/linux-amd64`, { headers: { 'if-none-match': `"sha256-${digest}"` } });
    expect(again.status).toBe(304);
  });

  it('serves one byte range, a suffix range, and 416 past the end', async () => {
    const part = await fetch(`${base}/1.2.3/linux-amd64`, { headers: { range: 'bytes=10-19' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe('bytes 10-19/1000');
    expect(part.headers.get('content-length')).toBe('10');
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(10, 20))).toBe(true);
    const tail = await fetch(`${base}/1.2.3/linux-amd64`, { headers: { range: 'bytes=-5' } });
    expect(tail.headers.get('content-range')).toBe('bytes 995-999/1000');
    expect(Buffer.from(await tail.arrayBuffer()).equals(bytes.subarray(995))).toBe(true);
    const past = await fetch(`${base}/1.2.3/linux-amd64`, { headers: { range: 'bytes=1000-' } });
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe('bytes */1000');
  });

  it('ignores a range whose If-Range names another version of the file', async () => {
    const response = await fetch(`${base}/1.2.3/linux-amd64`, { headers: { range: 'bytes=0-9', 'if-range': '"sha256-old"' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe('1000');
  });

  it.each([
    ['an unknown version', '9.9.9/linux-amd64'],
    ['a built but unserved arch', '1.2.3/linux-s390x'],
    ['an arch not built', '1.2.3/linux-arm64'],
    ['a version that is not one', '..%2F1.2.3/linux-amd64'],
    ['a version with no release manifest', '9.9.9/release-manifest.json'],
  ])('answers 404 for %s', async (_name, rest) => {
    const response = await fetch(`${base}/${rest}`);
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('GET /api/compute/downloads/bcd/{version}/release-manifest.json', () => {
  it('serves the signed manifest of a build as JSON', async () => {
    const response = await fetch(`${base}/1.2.3/release-manifest.json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('content-length')).toBe(String(manifest.length));
    expect(await response.text()).toBe(manifest);
  });
});
