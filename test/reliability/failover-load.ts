import { X509Certificate } from 'node:crypto';
import { prepareJoinAttempt, type JoinTrust } from '../../agent/join';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { postToGateway, type GatewayTarget } from '../../agent/renew/gateway-client';
import { loadIdentity, type LoadedIdentity } from '../../agent/renew/identity';
import { renewIdentity } from '../../agent/renew/renew';
import { clientIdentityOf } from '../../agent/renew/tpm-renewal';
import type { IssuedAnswer } from '../../agent/verify-answer';
import { machineClaims } from '../join-harness';
import { storeJoinedIdentity, verifiedJoinAnswer } from '../joined-identity';

/**
 * The load of the failover drill: joins and renewals through the gateways, each call recorded with when it was
 * sent, when it was answered, its status and body, and what a 200 issued (node, certificate serial).
 */

export const BASE = '/api/compute';
/** A call that got no answer within this is recorded as unanswered (status 0) and the load goes on. */
const CALL_TIMEOUT_MS = 15_000;

export interface Call {
  kind: 'join' | 'renew';
  sentAt: number;
  answeredAt: number;
  /** 0: no HTTP answer (the connection failed or timed out). */
  status: number;
  body: Buffer;
  /** On a 200: the node and the serial of the certificate the answer carries (hex, lower case). */
  nodeId?: string;
  serial?: string;
  /** On a renewal: the serial of the certificate it renewed. */
  from?: string;
}

const serialOf = (chain: readonly string[]) => new X509Certificate(Buffer.from(chain[0]!, 'base64')).serialNumber.toLowerCase();

/** One join attempt through `target` (of a new machine unless `claims` says which), recorded; a 200 is verified as the agent verifies it. */
export async function joinOnce(
  target: GatewayTarget,
  token: string,
  trust: JoinTrust,
  calls: Call[],
  claims = machineClaims(),
): Promise<{ call: Call; answer?: IssuedAnswer; keys: ReturnType<typeof generateNodeKeyAndCsr> }> {
  const keys = generateNodeKeyAndCsr();
  const attempt = await prepareJoinAttempt({ token, trust, claims, keys });
  const call: Call = { kind: 'join', sentAt: Date.now(), answeredAt: 0, status: 0, body: Buffer.alloc(0) };
  try {
    const reply = await postToGateway(target, undefined, `${BASE}/v1/join`, attempt.body, CALL_TIMEOUT_MS);
    Object.assign(call, { status: reply.status, body: reply.body });
  } catch (error) {
    call.body = Buffer.from((error as Error).message);
  }
  call.answeredAt = Date.now();
  calls.push(call);
  if (call.status !== 200) return { call, keys };
  const answer = verifiedJoinAnswer(call.body, trust, keys);
  call.nodeId = answer.nodeId;
  call.serial = serialOf(answer.certificateChain);
  return { call, answer, keys };
}

/** A machine joined through `target` before the drill, its identity on disk (for an agent's session loop). */
export async function joinedMachine(
  target: GatewayTarget,
  token: string,
  trust: JoinTrust,
  calls: Call[],
  claims = machineClaims(),
): Promise<{ dir: string; identity: LoadedIdentity }> {
  const { call, answer, keys } = await joinOnce(target, token, trust, calls, claims);
  if (!answer) throw new Error(`a join before the drill answered ${call.status}: ${call.body.toString()}`);
  const dir = await storeJoinedIdentity('bc-drill-node-', keys, answer);
  return { dir, identity: await loadIdentity(dir) };
}

/**
 * One renewal of `current` through `target`, recorded with its raw answer. Returns the renewed identity on a
 * 200, else the current one (the agent keeps its identity and tries again later).
 */
export async function renewOnceRecorded(current: LoadedIdentity, target: GatewayTarget, calls: Call[]): Promise<LoadedIdentity> {
  const call: Call = {
    kind: 'renew',
    sentAt: Date.now(),
    answeredAt: 0,
    status: 0,
    body: Buffer.alloc(0),
    from: current.leaf.serialNumber.toLowerCase(),
  };
  calls.push(call);
  const post = async (pathname: string, body: string) => {
    const reply = await postToGateway(target, clientIdentityOf(current), pathname, body, CALL_TIMEOUT_MS);
    Object.assign(call, { status: reply.status, body: reply.body });
    return reply;
  };
  try {
    const renewed = await renewIdentity(current, { ...target, basePath: BASE }, Date.now, undefined, post);
    call.nodeId = renewed.identity.nodeId;
    call.serial = renewed.leaf.serialNumber.toLowerCase();
    return renewed;
  } catch (error) {
    if (call.status === 0) call.body = Buffer.from((error as Error).message);
    return current;
  } finally {
    call.answeredAt = Date.now();
  }
}

/** Runs `task` over and over on `workers` workers until `stop()` says so. */
export async function keepRunning(workers: number, stop: () => boolean, task: (worker: number) => Promise<void>): Promise<void> {
  await Promise.all(
    Array.from({ length: workers }, async (_, worker) => {
      while (!stop()) await task(worker);
    }),
  );
}

/** The connected nodes of `tenantId` as the API at `apiUrl` answers them (REST, with `apiKey`), or null while it cannot. */
export async function connectedSeenBy(apiUrl: string, tenantId: string, apiKey: string): Promise<string[] | null> {
  try {
    const answer = await fetch(`${apiUrl}${BASE}/v1/tenants/${tenantId}/nodes?connected=true&limit=500`, {
      headers: { authorization: `Bearer ${apiKey}` },
      signal: AbortSignal.timeout(5_000),
    });
    if (answer.status !== 200) return null;
    return ((await answer.json()) as { items: Array<{ id: string }> }).items.map((n) => n.id).sort();
  } catch {
    return null;
  }
}
