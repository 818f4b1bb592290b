import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, expect } from 'vitest';
import type { GatewayTarget } from '../agent/renew/gateway-client';
import { loadIdentity, type LoadedIdentity } from '../agent/renew/identity';
import type { ServerEvent } from '../agent/session/sse';
import { verifyEnvelope } from '../protocol/envelope';
import { parseCommandBody, type CommandBody } from '../protocol/command-wire';
import { commandResultPath } from '../protocol/command-wire';
import { testDb } from './db';
import { createTestTenant, type TestTenant } from './fixtures';
import { mintToken } from './join-harness';
import { helloOverH2 } from './node-connection';
import { createRenewHarness, joinThroughGateway, type RenewHarness } from './renew-harness';
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

/** What a command test file works with: a renew harness (gateway and API), a tenant, and its nodes' sessions. */
export interface CommandTestbed {
  r: RenewHarness;
  t: TestTenant;
  /** A node joined through the gateway, with a command session opened by hand and welcomed. */
  connectedNode(): Promise<{ nodeId: string; identity: LoadedIdentity; session: CommandSession }>;
  /** A command session of `identity`, welcomed; closed after the file's tests. */
  welcomedSession(identity: LoadedIdentity, nodeId: string): Promise<CommandSession>;
  /** Runs `close` after the file's tests (before the harness closes). */
  closeAfter(close: () => unknown): void;
}

/** A {@link CommandTestbed} created before the calling file's tests and handed to `use`, closed after them. */
export function useCommandTestbed(use: (bed: CommandTestbed) => void): void {
  let r: RenewHarness | undefined;
  const closing: Array<() => unknown> = [];
  beforeAll(async () => {
    const harness = (r = await createRenewHarness());
    const t = await createTestTenant(testDb());
    const closeAfter = (close: () => unknown) => void closing.push(close);
    const welcomedSession = async (identity: LoadedIdentity, nodeId: string) => {
      const session = await openCommandSession(harness.target, identity, nodeId);
      closeAfter(() => session.close());
      expect(session.status).toBe(200);
      await expect.poll(() => session.events.some((e) => e.type === 'welcome'), { timeout: 5_000 }).toBe(true);
      return session;
    };
    const connectedNode = async () => {
      const { dir, answer } = await joinThroughGateway(harness, (await mintToken(t, { maxUses: 1 })).token!);
      const identity = await loadIdentity(dir);
      return { nodeId: answer.nodeId, identity, session: await welcomedSession(identity, answer.nodeId) };
    };
    use({ r: harness, t, connectedNode, welcomedSession, closeAfter });
  });
  afterAll(async () => {
    for (const close of closing.splice(0)) await close();
    await r?.close();
  });
}
