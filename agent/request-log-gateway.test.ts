import { X509Certificate } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { mintToken } from '../test/join-harness';
import { createTestTenant } from '../test/fixtures';
import { testDb } from '../test/db';
import { BASE, createRenewHarness, joinThroughGateway, type RenewHarness } from '../test/renew-harness';
import { loadIdentity } from './renew/identity';
import { renewIdentity } from './renew/renew';
import { openSession } from './session/session-client';
import { setAgentLogDefault } from './request-log';

// The agent's request lines against a real gateway (TLS, mutual TLS, HTTP/1.1 and HTTP/2): a join, a renewal
// on a connection of its own, a session's Hello and a renewal on the session. Each line's id is the one the
// gateway logged for the same call (sent as x-request-id), with the same path and status.

let r: RenewHarness;
const written: string[] = [];
beforeAll(async () => {
  r = await createRenewHarness();
});
afterAll(async () => {
  await r?.close();
});
afterEach(() => {
  vi.restoreAllMocks();
  setAgentLogDefault('warn');
});

describe('the agent request log through the gateway', () => {
  it('one line per request, whose request id the gateway logs for the same call', { timeout: 60_000 }, async () => {
    setAgentLogDefault('info');
    const write = process.stderr.write.bind(process.stderr);
    vi.spyOn(process.stderr, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: never[]) => {
      if (String(chunk).includes('"agent request"')) written.push(String(chunk));
      else write(chunk, ...rest);
      return true;
    }) as typeof process.stderr.write);
    const t = await createTestTenant(testDb());
    const token = (await mintToken(t)).token!;
    const { dir } = await joinThroughGateway(r, token);
    const renewed = await renewIdentity(await loadIdentity(dir), r.target);
    const session = await openSession(r.target, renewed, {
      basePath: BASE,
      agentVersion: '0.1.0-test',
      signingKey: new X509Certificate(r.h.trust.signingCertificateDer).publicKey,
    });
    await renewIdentity(renewed, r.target, Date.now, undefined, (pathname, body) => session.post(pathname, body));
    session.close();
    await session.ended;
    await new Promise((resolve) => setTimeout(resolve, 200));

    const agentLines = written.map(
      (w) => JSON.parse(w) as { level: string; requestId: string; method: string; path: string; status: number; ms: number },
    );
    expect(agentLines.map((l) => [l.level, l.method, l.path, l.status])).toEqual([
      ['info', 'POST', `${BASE}/v1/join`, 200],
      ['info', 'POST', `${BASE}/v1/renew`, 200],
      ['info', 'POST', `${BASE}/v1/session`, 200],
      ['info', 'POST', `${BASE}/v1/renew`, 200],
    ]);
    const gateway = r.gatewayLines.map((line) => JSON.parse(line) as { requestId: string; path: string; status: number });
    for (const line of agentLines) {
      expect(
        gateway.filter((g) => g.requestId === line.requestId).map((g) => [g.path, g.status]),
        line.path,
      ).toEqual([[line.path, line.status]]);
    }
    expect(new Set(agentLines.map((l) => l.requestId)).size).toBe(agentLines.length);
    expect(written.join('')).not.toContain(token);
    expect(written.join('')).not.toContain('PRIVATE KEY');
  });
});
