import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { signedInOperator } from '../../test/console-session';
import { handleTrpcRequest, TRPC_MAX_BODY_BYTES } from './trpc-http';

async function signedIn() {
  const db = testDb();
  const t = await createTestTenant(db);
  return { t, claim: await signedInOperator(db, t.tenantId, 'admin') };
}

/** A body of `total` bytes made on demand, counting how much of it the server pulled. */
function endlessBody(total: number) {
  const chunk = new Uint8Array(64 * 1024).fill(0x20);
  const counter = { pulled: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (counter.pulled >= total) return controller.close();
      counter.pulled += chunk.length;
      controller.enqueue(chunk);
    },
  });
  return { stream, counter };
}

const post = (path: string, body: BodyInit, claim: { operatorId: string; sessionVersion: number }, headers: Record<string, string> = {}) =>
  handleTrpcRequest(
    new Request(`http://console.test/api/trpc/${path}`, {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
      duplex: 'half',
    } as RequestInit),
    { db: testDb(), sessionOperatorId: async () => claim },
  );

describe('tRPC request bodies, capped like REST', () => {
  it('answers 413 to a signed-in caller streaming more than the cap, having read little more than the cap', async () => {
    const { claim } = await signedIn();
    const { stream, counter } = endlessBody(32 * 1024 * 1024);
    const answer = await post('sites.create', stream, claim);
    expect(answer.status).toBe(413);
    expect(await answer.json()).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/larger than/) });
    expect(counter.pulled).toBeLessThanOrEqual(TRPC_MAX_BODY_BYTES + 2 * 64 * 1024);
  });

  it('answers 413 at once to a body that declares more than the cap', async () => {
    const { claim } = await signedIn();
    const { stream, counter } = endlessBody(32 * 1024 * 1024);
    const answer = await post('sites.create', stream, claim, { 'content-length': String(32 * 1024 * 1024) });
    expect(answer.status).toBe(413);
    expect(counter.pulled).toBeLessThanOrEqual(2 * 64 * 1024);
  });

  it('still serves mutations under the cap', async () => {
    const { t, claim } = await signedIn();
    const answer = await post('sites.create', JSON.stringify({ tenantId: t.tenantId, name: `s-${randomBytes(3).toString('hex')}` }), claim);
    expect(answer.status).toBe(200);
    // Just under the cap is read and judged on its content (a name far too long), not refused for its size.
    const padded = JSON.stringify({ tenantId: t.tenantId, name: 'x'.repeat(TRPC_MAX_BODY_BYTES - 200) });
    expect(Buffer.byteLength(padded)).toBeLessThanOrEqual(TRPC_MAX_BODY_BYTES);
    const judged = await post('sites.create', padded, claim);
    expect(judged.status).toBe(400);
  });
});
