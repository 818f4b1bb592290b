import { X509Certificate } from 'node:crypto';
import type { GatewayTarget } from '../agent/renew/gateway-client';
import type { LoadedIdentity } from '../agent/renew/identity';
import type { ServerEvent } from '../agent/session/sse';
import { verifyEnvelope } from '../protocol/envelope';
import { parseCommandBody, type CommandBody } from '../protocol/command-wire';
import { commandResultPath } from '../protocol/command-wire';
import { helloOverH2 } from './node-connection';

// Kept free of the server and of vitest: the Playwright spec of node commands imports it too (the set-up of
// the command test files is test/command-testbed.ts).

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
  const { status, events, connection } = await helloOverH2(target, identity, {
    nodeId,
    agentVersion: '0.1.0',
    commandKinds: ['bcd.doctor', 'bcd.renew', 'trust.refresh'],
  });
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
