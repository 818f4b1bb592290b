import { describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { chainToPem, postToGateway } from '../../agent/renew/gateway-client';
import type { LoadedIdentity } from '../../agent/renew/identity';
import { buildRenewBody } from '../../agent/renew/renew';
import { testDb } from '../../test/db';
import { BASE } from '../../test/renew-harness';
import { joinedNode, r, useRenewHarness } from '../../test/renew-file';
import { renewalsPerNodePerHour } from './renew-limit';

const REFUSED = '{"code":"ACCESS_DENIED","message":"Renew refused"}';
const PATH = `${BASE}/v1/renew`;
// The join's certificate counts too: three renewals fit in the hour.
const PER_HOUR = 4;

useRenewHarness({ env: { BETTER_COMPUTE_RENEWALS_PER_NODE_PER_HOUR: String(PER_HOUR) } });

/** One renewal of `id`'s certificate with a new key, through the gateway. */
function renewOnce(id: LoadedIdentity) {
  const next = generateNodeKeyAndCsr();
  const body = buildRenewBody(id, next.csrDer, next.csrSha256, Math.floor(Date.now() / 1000));
  const client = { keyPem: id.identity.privateKeyPem, certificatePem: chainToPem([id.identity.certificateChain[0]!]) };
  return postToGateway(r.target, client, PATH, body);
}

async function reasons(tenantId: string, nodeId: string): Promise<string[]> {
  const events = await testDb().event.findMany({ where: { tenantId, type: 'security.renew.refused' }, orderBy: { id: 'asc' } });
  return events
    .map((e) => e.data as { reason: string; nodeId: string | null })
    .filter((d) => d.nodeId === nodeId)
    .map((d) => d.reason);
}

describe('renewals per node and hour', () => {
  it('a flood of proven renewals of one node issues exactly the limit, and refuses the rest uniformly as rate-limited', async () => {
    const id = await joinedNode();
    const replies = await Promise.all(Array.from({ length: 12 }, () => renewOnce(id)));
    expect(replies.filter((reply) => reply.status === 200)).toHaveLength(PER_HOUR - 1);
    const refused = replies.filter((reply) => reply.status !== 200);
    expect(refused).toHaveLength(12 - (PER_HOUR - 1));
    for (const reply of refused) {
      expect(reply.status).toBe(403);
      expect(reply.body.toString()).toBe(REFUSED);
    }
    // Once past it, a lone renewal is refused before its certificate is even signed.
    const later = await renewOnce(id);
    expect(later.status).toBe(403);
    expect(later.body.toString()).toBe(REFUSED);
    expect(await testDb().nodeCert.count({ where: { nodeId: id.identity.nodeId } })).toBe(PER_HOUR);
    // The node's owner hears of it (the caller proved the node's key), one reason for every refusal.
    const recorded = await reasons(id.tenantId, id.identity.nodeId);
    expect(recorded).toHaveLength(refused.length + 1);
    expect(new Set(recorded)).toEqual(new Set(['rate-limited']));
  });

  it('counts per node: another node renews', async () => {
    const id = await joinedNode();
    expect((await renewOnce(id)).status).toBe(200);
  });
});

describe('the default limit', () => {
  it('follows the agents schedule with headroom, at least 12 per hour, and takes the variable', () => {
    expect(renewalsPerNodePerHour({})).toBe(12);
    expect(renewalsPerNodePerHour({}, 120)).toBe(220);
    expect(renewalsPerNodePerHour({ BETTER_COMPUTE_RENEWALS_PER_NODE_PER_HOUR: '30' }, 120)).toBe(30);
    expect(() => renewalsPerNodePerHour({ BETTER_COMPUTE_RENEWALS_PER_NODE_PER_HOUR: '0' })).toThrow(/RENEWALS_PER_NODE_PER_HOUR/);
  });
});
