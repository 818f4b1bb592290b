import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

// A webhook receiver for the tests: a real HTTP server that checks every delivery's signature with its own
// Standard Webhooks code, sharing none with the server.

/**
 * The receiver's own Standard Webhooks check, written from the specification and sharing no code with the
 * server: HMAC-SHA256 keyed with the base64 after `whsec_`, over `id.timestamp.body`, compared with each
 * space-separated `v1,` signature, the timestamp within five minutes.
 */
function verifyStandardWebhook(secret: string, headers: http.IncomingHttpHeaders, body: string): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const signatures = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof signatures !== 'string') return false;
  if (!/^\d+$/.test(timestamp) || Math.abs(Date.now() / 1000 - Number(timestamp)) > 300) return false;
  const key = Buffer.from(secret.split('_')[1]!, 'base64');
  const expected = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest();
  return signatures.split(' ').some((entry) => {
    const [version, value] = entry.split(',');
    if (version !== 'v1' || !value) return false;
    const given = Buffer.from(value, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

type Received = { path: string; id: string; verified: boolean; body: { type: string; timestamp: string; data: Record<string, unknown> } };

/** A receiver on 127.0.0.1: per path, a list of statuses to answer in turn (the last one repeats). */
export class Receiver {
  readonly received: Received[] = [];
  readonly secrets = new Map<string, string>();
  readonly script = new Map<string, number[]>();
  connections = 0;
  private server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const raw = Buffer.concat(chunks).toString('utf8');
      const secret = this.secrets.get(path) ?? '';
      this.received.push({
        path,
        id: String(req.headers['webhook-id']),
        verified: verifyStandardWebhook(secret, req.headers, raw),
        body: JSON.parse(raw),
      });
      const statuses = this.script.get(path) ?? [200];
      const status = statuses.length > 1 ? statuses.shift()! : statuses[0]!;
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status === 200 ? 'ok' : 'nope');
    });
  });
  port = 0;

  async start() {
    this.server.on('connection', () => this.connections++);
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }
  url(path: string) {
    return `http://127.0.0.1:${this.port}${path}`;
  }
  at(path: string) {
    return this.received.filter((r) => r.path === path);
  }
  close() {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(resolve));
  }
}

export async function until<T>(what: string, check: () => T | Promise<T>, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
