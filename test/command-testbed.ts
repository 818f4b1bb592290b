import { afterAll, beforeAll, expect } from 'vitest';
import { loadIdentity, type LoadedIdentity } from '../agent/renew/identity';
import { openCommandSession, type CommandSession } from './command-session';
import { testDb } from './db';
import { createTestTenant, type TestTenant } from './fixtures';
import { mintToken } from './join-harness';
import { createRenewHarness, joinThroughGateway, type RenewHarness } from './renew-harness';

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
