import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_BODY_BYTES } from '../http/body';
import { createBootServer, type NodeHandler } from './http-server';
import { createServices } from './services';

// Nothing here reaches the database: the services are wired, never asked.
const services = createServices({ databaseUrl: 'postgresql://127.0.0.1:1/unused' });

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A boot server whose "Next" counts the requests that reach it and answers at once. */
async function start() {
  const seen = { requests: 0 };
  const next: NodeHandler = async (_req, res) => {
    seen.requests += 1;
    res.writeHead(200, { 'content-type': 'application/json', connection: 'close' }).end('{}');
  };
  const server = createBootServer(services, () => next);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, seen };
}

/** Declares `declared` bytes, sends only the first `sent`, and resolves with the status once an answer comes. */
function postDeclaring(port: number, path: string, declared: number, sent: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method: 'POST', path, headers: { 'content-type': 'application/json', 'content-length': declared } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d));
        res.on('end', () => {
          resolve({ status: res.statusCode!, body });
          req.destroy();
        });
      },
    );
    req.on('error', reject);
    req.write(Buffer.alloc(sent, 0x20));
  });
}

describe('the boot server and tRPC bodies', () => {
  it('answers 413 to a tRPC POST declaring more than the cap before Next reads any of it', async () => {
    const { port, seen } = await start();
    const answer = await postDeclaring(port, '/api/trpc/sites.create', 100 * 1024 * 1024, 1024);
    expect(answer.status).toBe(413);
    expect(JSON.parse(answer.body)).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/larger than/) });
    expect(seen.requests).toBe(0);
  });

  it('lets a tRPC POST within the cap through to Next', async () => {
    const { port, seen } = await start();
    const answer = await postDeclaring(port, '/api/trpc/sites.create', 1024, 1024);
    expect(answer.status).toBe(200);
    expect(seen.requests).toBe(1);
    expect(DEFAULT_MAX_BODY_BYTES).toBe(1024 * 1024);
  });
});
