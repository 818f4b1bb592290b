import { createPrivateKey, type KeyObject } from 'node:crypto';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { signEnvelope } from '../../protocol/envelope';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import type { PkiBundle } from '../../server/pki/bundle/bundle';
import { BASE } from './deployment';

/** An SSE event the forging gateway sends on a session: its type and its data (JSON). */
interface ForgedEvent {
  event: string;
  data: object;
}

/**
 * A gateway that is not the product's: it holds a leaf from the deployment's real serving CA (so agents connect
 * to it as to their gateway), answers the well-known document with `document`, and answers every Hello with a
 * genuine `welcome` (signed by `signingKey`) followed by the events `eventsFor(nodeId)` gives, in order; the
 * stream stays open until the gateway closes. What a compromised network path, or a buggy gateway, could send.
 */
export async function startForgingGateway(options: {
  bundle: PkiBundle;
  document: () => Promise<unknown>;
  eventsFor: (nodeId: string) => ForgedEvent[];
}): Promise<{ url: string; hellos: number; close(): Promise<void> }> {
  const cert = issueGatewayCertificate(options.bundle, { sans: ['localhost', '127.0.0.1'] });
  const signingKey: KeyObject = createPrivateKey(options.bundle.signingKey.privateKeyPem);
  const state = { hellos: 0 };
  const server = http2.createSecureServer({
    key: cert.privateKeyPem,
    cert: cert.chainPem,
    allowHTTP1: true,
    requestCert: true,
    rejectUnauthorized: false,
  });
  server.on('request', (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => {
    if (req.method === 'GET' && req.url === `${BASE}/.well-known/better-compute`) {
      void options.document().then((doc) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(doc));
      });
      return;
    }
    if (req.method === 'POST' && req.url === `${BASE}/v1/session`) {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        state.hellos++;
        const { nodeId } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { nodeId: string };
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const welcome = {
          status: 'welcome',
          nodeId,
          sessionId: `ses_forged${state.hellos}`,
          serverTime: Math.floor(Date.now() / 1000),
          heartbeatSeconds: 60,
        };
        const events: ForgedEvent[] = [{ event: 'welcome', data: signEnvelope(welcome, signingKey) }, ...options.eventsFor(nodeId)];
        for (const e of events) res.write(`event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`);
      });
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end('{"code":"NOT_FOUND","message":"Not found"}');
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://127.0.0.1:${port}`,
    get hellos() {
      return state.hellos;
    },
    async close() {
      for (const session of sessions) session.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
