import http2 from 'node:http2';
import { chainToPem, connectGateway, type GatewayTarget } from '../agent/renew/gateway-client';
import type { LoadedIdentity } from '../agent/renew/identity';
import { SseReader, type ServerEvent } from '../agent/session/sse';

/** The agent endpoints' base path (protocol.md's default). */
const BASE = '/api/compute';

/** The client certificate (the leaf alone) and key of a node's identity, as the agent presents them. */
export const nodeCredentials = (identity: LoadedIdentity) => ({
  keyPem: identity.identity.privateKeyPem,
  certificatePem: chainToPem([identity.identity.certificateChain[0]!]),
});

/** An HTTP/2 connection to the gateway `target` with the node certificate of `identity` (none when null). */
export async function h2ConnectionAs(target: GatewayTarget, identity: LoadedIdentity | null): Promise<http2.ClientHttp2Session> {
  const socket = await connectGateway(target, identity ? nodeCredentials(identity) : undefined, 10_000, ['h2']);
  return http2.connect(target.gatewayUrl, { createConnection: () => socket });
}

/** A Hello as a test sends it by hand: its status, the events of its stream as they come, or a refusal's bytes. */
export interface RawHello {
  status: number;
  /** A refusal's body (the connection is then closed). */
  body: Buffer;
  events: ServerEvent[];
  connection: http2.ClientHttp2Session;
  close(): void;
}

/** A Hello with `hello` as its body over HTTP/2 (as any agent may send it) on a connection of its own. */
export async function helloOverH2(target: GatewayTarget, identity: LoadedIdentity, hello: object): Promise<RawHello> {
  const connection = await h2ConnectionAs(target, identity);
  connection.on('error', () => {});
  const stream = connection.request({ ':method': 'POST', ':path': `${BASE}/v1/session`, 'content-type': 'application/json' });
  const session: RawHello = { status: 0, body: Buffer.alloc(0), events: [], connection, close: () => connection.destroy() };
  const reader = new SseReader();
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve, reject) => {
    stream.once('response', (headers) => {
      session.status = Number(headers[':status']);
      resolve();
    });
    stream.once('error', reject);
    stream.end(JSON.stringify(hello));
  });
  stream.on('data', (chunk: Buffer) => {
    if (session.status === 200) session.events.push(...reader.push(chunk.toString('utf8')));
    else chunks.push(chunk);
  });
  stream.on('error', () => {});
  if (session.status !== 200) {
    await new Promise((resolve) => stream.once('end', resolve));
    session.body = Buffer.concat(chunks);
    connection.destroy();
  }
  return session;
}
