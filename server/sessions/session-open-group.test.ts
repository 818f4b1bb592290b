import type { KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { openSession, type AgentSession } from '../../agent/session/session-client';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { machineClaims, mintToken } from '../../test/join-harness';
import { BASE, joinThroughGateway, type RenewHarness } from '../../test/renew-harness';
import { useRenewHarness } from '../../test/session-harness';

// A reconnect storm in small: many Hellos at once open their sessions in shared transactions (a group commit),
// each still exactly as alone: its own session row, node.connected once per node, a welcome naming its node.

let r: RenewHarness;
let signingKey: KeyObject;
useRenewHarness((created) => ({ r, signingKey } = created));

describe('Hellos that arrive together', () => {
  it('open in fewer transactions than Hellos, each session its own and node.connected once per node', { timeout: 120_000 }, async () => {
    const t = await createTestTenant(testDb());
    const token = (await mintToken(t, { maxUses: 40 })).token!;
    const identities: LoadedIdentity[] = [];
    for (let i = 0; i < 40; i++) identities.push(await loadIdentity((await joinThroughGateway(r, token, machineClaims())).dir));
    const before = { ...r.sessions.openStats };
    const sessions: AgentSession[] = await Promise.all(
      identities.map((identity) => openSession(r.target, identity, { basePath: BASE, agentVersion: '0.1.0-group', signingKey })),
    );
    const runs = r.sessions.openStats.runs - before.runs;
    const calls = r.sessions.openStats.calls - before.calls;
    expect(calls).toBe(40);
    expect(runs).toBeLessThan(calls);
    for (const [i, session] of sessions.entries()) expect(session.welcome.nodeId).toBe(identities[i]!.identity.nodeId);
    const nodeIds = identities.map((identity) => identity.identity.nodeId);
    const rows = await testDb().nodeSession.findMany({ where: { nodeId: { in: nodeIds } } });
    expect(rows.map((row) => row.id).sort()).toEqual(sessions.map((s) => s.welcome.sessionId).sort());
    const connected = (await testDb().event.findMany({ where: { tenantId: t.tenantId, type: 'node.connected' } })).map(
      (e) => (e.data as { nodeId: string }).nodeId,
    );
    expect(connected.sort()).toEqual([...nodeIds].sort());
    for (const s of sessions) s.close();
  });

  it("a node's second Hello waits for the next group, and both open with one node.connected", async () => {
    const t = await createTestTenant(testDb());
    const identity = await loadIdentity((await joinThroughGateway(r, (await mintToken(t)).token!, machineClaims())).dir);
    const [a, b] = await Promise.all(
      [0, 1].map(() => openSession(r.target, identity, { basePath: BASE, agentVersion: '0.1.0-group', signingKey })),
    );
    expect(a!.welcome.sessionId).not.toBe(b!.welcome.sessionId);
    expect(await testDb().nodeSession.count({ where: { nodeId: identity.identity.nodeId } })).toBe(2);
    const connected = await testDb().event.findMany({ where: { tenantId: t.tenantId, type: 'node.connected' } });
    expect(connected).toHaveLength(1);
    a!.close();
    b!.close();
  });
});
