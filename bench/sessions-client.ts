/**
 * A client process of `bench:sessions`: keeps the sessions of its share of the machines, each with the agent's
 * own session loop (agent/session/loop.ts), identities in memory, and renews on those sessions' connections
 * when the benchmark asks. Several of these share the machines so that no one client process holds ten
 * thousand TLS connections on one event loop (and one descriptor table); the benchmark forks them and talks
 * to them over the IPC channel:
 *
 *   parent → client: { type: 'identities', items: [{ keyPem, record }] }   (then more, in batches)
 *                    { type: 'start', target, startJitterMs, concurrentOpens, commandTrust }   open the sessions
 *                        (their loops run commands, checked under commandTrust's bundle)
 *                    { type: 'prepare', indices }                           make the renewals' keys and CSRs
 *                    { type: 'renew', id, index }                           renew machine `index` on its session
 *                    { type: 'trust', version }                            how many machines heard that trust version
 *                    { type: 'expect', nodeCaPem, joinSigningKeyPin, signingCertificate }
 *                        renewals from now on: their answers checked under the join-signing key (so a new node CA
 *                        may be introduced), and each new chain checked to end at that node CA (`chained`)
 *                    { type: 'stop' }                                       close everything and exit
 *   client → parent: { type: 'loaded' } { type: 'prepared' } { type: 'renewed', id, error?, chained? } { type: 'trusted', count }
 */
import { X509Certificate } from 'node:crypto';
import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../agent/keys';
import type { GatewayTarget } from '../agent/renew/gateway-client';
import { parseIdentity, type LoadedIdentity } from '../agent/renew/identity';
import { renewIdentity } from '../agent/renew/renew';
import { runSessionLoop } from '../agent/session/loop';
import { openSession, type AgentSession } from '../agent/session/session-client';
import { TrustStore } from '../agent/trust/store';

type Message =
  | { type: 'identities'; items: Array<{ keyPem: string; record: Parameters<typeof parseIdentity>[1] }> }
  | {
      type: 'start';
      target: GatewayTarget & { basePath: string };
      startJitterMs: number;
      concurrentOpens: number;
      commandTrust: { joinSigningKeyPin: string; signingCertificate: string; trust: unknown; commandTrustBundle: string[] };
    }
  | { type: 'prepare'; indices: number[] }
  | { type: 'renew'; id: number; index: number }
  | { type: 'trust'; version: number }
  | { type: 'expect'; nodeCaPem: string; joinSigningKeyPin: string; signingCertificate: string }
  | { type: 'stop' };

const send = (message: object) => process.send!(message);
const identities: LoadedIdentity[] = [];
const current: Array<AgentSession | null> = [];
const nextKeys = new Map<number, NodeKeyAndCsr>();
// One signal per session loop, as each real agent has its own: thousands of loops listening on one signal made
// every listener added (each wait of each loop) walk all the others'.
const controllers: AbortController[] = [];
let target: (GatewayTarget & { basePath: string }) | null = null;
let loops: Array<Promise<number>> = [];
/** Set by `expect`: what renewals are checked with from then on. */
let expected: { nodeCa: X509Certificate; joinSigningKeyPin: string; signingCertificate: string } | null = null;
/** The newest trust set version each machine heard in a `trust` event (0: none yet). */
const trustHeard: number[] = [];

/** The version of a `trust` event's envelope, read without checking it (the benchmark times delivery only). */
function trustVersionOf(data: unknown): number {
  try {
    const body = JSON.parse(Buffer.from(String((data as { body?: unknown }).body), 'base64url').toString('utf8')) as { version?: unknown };
    return typeof body.version === 'number' ? body.version : 0;
  } catch {
    return 0;
  }
}

/** Opens machine `machine`'s sessions with `open`, noting the trust set version of each `trust` event they hear. */
const hearingTrust =
  (open: typeof openSession, machine: number): typeof openSession =>
  (target, identity, options) =>
    open(target, identity, {
      ...options,
      onEvent: (event, session) => {
        if (event.type === 'trust') trustHeard[machine] = Math.max(trustHeard[machine] ?? 0, trustVersionOf(event.data));
        options.onEvent?.(event, session);
      },
    });

/**
 * At most `limit` sessions being opened at once by this process. Real agents are each on their own machine;
 * here a few processes stand in for thousands, and on a shared 2-core machine one that starts every
 * handshake at once completes none of them within the timeouts (each waits for all the others' turns).
 */
function boundedOpen(limit: number): typeof openSession {
  let active = 0;
  const waiting: Array<() => void> = [];
  return async (...args) => {
    if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
    else active++;
    try {
      return await openSession(...args);
    } finally {
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}

/** An in-memory trust set holding the join-signing key, as an agent's: a signed answer may bring a new node CA. */
async function signingTrust(pin: string, certificate: string): Promise<TrustStore> {
  const trust = await TrustStore.open({
    dir: null,
    install: { servingCaPin: target!.servingCaPin, joinSigningKeyPin: pin },
    log: () => {},
  });
  trust.learnSigningCertificate(certificate);
  return trust;
}

/**
 * Renews machine `index` on its session's connection. Once `expect` was heard, the answer is checked under the
 * join-signing key and the result says whether the new chain ends at the expected node CA, which issued its leaf.
 */
async function renewOnSession(
  index: number,
  session: AgentSession,
  to: GatewayTarget & { basePath: string },
): Promise<boolean | undefined> {
  const expecting = expected;
  const trust = expecting ? await signingTrust(expecting.joinSigningKeyPin, expecting.signingCertificate) : undefined;
  const renewed = await renewIdentity(
    identities[index]!,
    { ...to, ...(trust ? { trust } : {}) },
    Date.now,
    nextKeys.get(index),
    (pathname, body) => session.post(pathname, body),
  );
  if (!expecting) return undefined;
  const chain = renewed.identity.certificateChain;
  return (
    chain[chain.length - 1] === expecting.nodeCa.raw.toString('base64') &&
    renewed.leaf.checkIssued(expecting.nodeCa) &&
    renewed.leaf.verify(expecting.nodeCa.publicKey)
  );
}

/**
 * Starts every machine's session loop. They share one trust set, as agents of one install hold the same: the
 * join-signing key (welcomes are checked) and the command trust bundle of a join answer (commands are checked
 * and run by the agent's runner; the doctor answers a small report).
 */
async function startLoops(message: Extract<Message, { type: 'start' }>, open: typeof openSession) {
  const { commandTrust } = message;
  const trust = await signingTrust(commandTrust.joinSigningKeyPin, commandTrust.signingCertificate);
  await trust.acceptAnswerTrust(commandTrust.trust, { commandTrustBundle: commandTrust.commandTrustBundle }, 'bench');
  loops = identities.map((identity, i) => {
    current.push(null);
    const controller = new AbortController();
    controllers.push(controller);
    return runSessionLoop({
      identityDir: '(memory)',
      ...message.target,
      trust,
      agentVersion: 'bench',
      signal: controller.signal,
      log: () => {},
      startJitterMs: message.startJitterMs,
      openSession: hearingTrust(open, i),
      store: { load: async () => identity, replace: async () => {} },
      // No renewal by the loops during the run: the renewal phase times its own.
      renewalDelay: () => 24 * 3_600_000,
      onSession: (s) => (current[i] = s),
      commands: { doctor: async () => ({ bench: true, machine: i }), replayDir: null },
    });
  });
}

process.on('message', (message: Message) => {
  switch (message.type) {
    case 'identities':
      for (const item of message.items) identities.push(parseIdentity(item.keyPem, item.record));
      send({ type: 'loaded', count: identities.length });
      return;
    case 'start': {
      target = message.target;
      const open = boundedOpen(message.concurrentOpens);
      void startLoops(message, open);
      return;
    }
    case 'prepare':
      for (const index of message.indices) nextKeys.set(index, generateNodeKeyAndCsr());
      send({ type: 'prepared' });
      return;
    case 'renew': {
      const session = current[message.index];
      const done = (error?: string, chained?: boolean) =>
        send({ type: 'renewed', id: message.id, ...(error ? { error } : {}), ...(chained === undefined ? {} : { chained }) });
      if (!session || !target) return done(`machine ${message.index} has no session`);
      void renewOnSession(message.index, session, target).then(
        (chained) => done(undefined, chained),
        (error: Error) => done(error.message),
      );
      return;
    }
    case 'expect':
      expected = { ...message, nodeCa: new X509Certificate(message.nodeCaPem) };
      send({ type: 'expecting' });
      return;
    case 'trust':
      send({ type: 'trusted', count: trustHeard.filter((version) => version >= message.version).length });
      return;
    case 'stop':
      for (const controller of controllers) controller.abort();
      for (const s of current) s?.close();
      void Promise.all(loops).finally(() => process.exit(0));
      return;
    default:
      message satisfies never;
  }
});
send({ type: 'started' });
