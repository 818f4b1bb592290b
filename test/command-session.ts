import http2 from 'node:http2';
import { X509Certificate } from 'node:crypto';
import { chainToPem, connectGateway, type GatewayTarget } from '../agent/renew/gateway-client';
import type { LoadedIdentity } from '../agent/renew/identity';
import { SseReader, type ServerEvent } from '../agent/session/sse';
import { verifyEnvelope } from '../protocol/envelope';
import { parseCommandBody, type CommandBody } from '../protocol/command-wire';
import { commandResultPath } from '../protocol/command-wire';
/** The agent endpoints' base path (protocol.md's default). */
const BASE = '/api/compute';

/**
 * A session as an agent holds it, for command tests: a Hello over HTTP/2 through a gateway, the events of its
 * stream as they come, and results posted on the same connection (protocol.md "Commands").
 */
export interface CommandSession {
  status: number;
  events: ServerEvent[];
  /** The `command` events' data so far. */
  commands(): Array<{ body: string; sig: string; sigs?: Array<{ pin: string; sig: string }> }>;
  /** POSTs `body` to the result path of `commandId` on this session's connection; status and body bytes. */
  postResult(commandId: string, body: string | Buffer): Promise<{ status: number; body: Buffer }>;
  close(): void;
}

export async function openCommandSession(target: GatewayTarget, identity: LoadedIdentity, nodeId: string): Promise<CommandSession> {
  const socket = await connectGateway(
    target,
    { keyPem: identity.identity.privateKeyPem, certificatePem: chainToPem([identity.identity.certificateChain[0]!]) },
    10_000,
    ['h2'],
  );
  const connection = http2.connect(target.gatewayUrl, { createConnection: () => socket });
  connection.on('error', () => {});
  const stream = connection.request({ ':method': 'POST', ':path': `${BASE}/v1/session`, 'content-type': 'application/json' });
  const events: ServerEvent[] = [];
  const reader = new SseReader();
  const status = await new Promise<number>((resolve, reject) => {
    stream.once('response', (headers) => resolve(Number(headers[':status'])));
    stream.once('error', reject);
    stream.end(JSON.stringify({ nodeId, agentVersion: '0.1.0', commandKinds: ['bcd.doctor', 'bcd.renew', 'trust.refresh'] }));
  });
  stream.on('data', (chunk: Buffer) => events.push(...reader.push(chunk.toString('utf8'))));
  stream.on('error', () => {});
  const postResult = (commandId: string, body: string | Buffer) =>
    new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      const request = connection.request({
        ':method': 'POST',
        ':path': `${BASE}${commandResultPath(commandId)}`,
        'content-type': 'application/json',
      });
      const chunks: Buffer[] = [];
      let answered = 0;
      request.once('response', (headers) => (answered = Number(headers[':status'])));
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.once('end', () => resolve({ status: answered, body: Buffer.concat(chunks) }));
      request.once('error', reject);
      request.end(body);
    });
  return {
    status,
    events,
    commands: () => events.filter((e) => e.type === 'command').map((e) => e.data as ReturnType<CommandSession['commands']>[number]),
    postResult,
    close: () => connection.destroy(),
  };
}

/** A command envelope verified under the command trust bundle's first certificate, then parsed (as the agent does). */
export function verifiedCommand(envelope: { body: string; sig: string }, commandTrustBundle: readonly string[]): CommandBody {
  const key = new X509Certificate(Buffer.from(commandTrustBundle[0]!, 'base64')).publicKey;
  const body = parseCommandBody(verifyEnvelope(envelope, key));
  if (!body) throw new Error('not a command body');
  return body;
}
