import { generateNodeKeyAndCsr, type NodeKeyAndCsr } from '../keys';
import { prepareJoinAttempt, sendJoin, type JoinTrust } from '../join';
import { JoinRefusedError } from '../join-refused';
import type { HardwareClaims } from '../../protocol/hardware-claims';
import { keepAliveFetch } from './http-post';
import { simulatedClaims } from './simulate';

/** A simulated PXE-booted machine: its lease's MAC, its claims, its discovery token and the one CSR it keeps. */
export interface PxeMachine {
  index: number;
  mac: string;
  claims: HardwareClaims;
  token: string;
  keys: NodeKeyAndCsr;
}

type PxeOutcome = { kind: 'joined'; nodeId: string } | { kind: 'refused' } | { kind: 'failed'; message: string };

interface PxeEvents {
  onPending?: (machine: PxeMachine, requestId: string, retryAfterSeconds: number) => void;
  onDone?: (machine: PxeMachine, outcome: PxeOutcome) => void;
}

/** A machine of the simulation, before its token is minted (the MAC is what the boot step saw). */
export function newPxeMachine(index: number): Omit<PxeMachine, 'token'> {
  // Two models, alternating, so a search or a rule on vendor and model has something to tell apart.
  const model =
    index % 2 ? { sysVendor: 'Dell Inc.', productName: 'PowerEdge R760xa' } : { sysVendor: 'Supermicro', productName: 'SYS-421GE-TNRT' };
  const claims = { ...simulatedClaims(index), ...model };
  return { index, mac: claims.macs![0]!, claims, keys: generateNodeKeyAndCsr() };
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/**
 * Runs one PXE machine as the ramdisk agent does: join through the discovery attestor, and while the
 * answer is `pending`, retry the same CSR (a fresh seal each time) after `retryAfterSeconds`, until it is
 * admitted (a `ramdisk` certificate, verified) or refused (rejected, expired).
 */
export async function runPxeMachine(options: {
  serverUrl: string;
  trust: JoinTrust;
  machine: PxeMachine;
  events?: PxeEvents;
  fetch?: typeof fetch;
  signal?: AbortSignal;
  /** Scales the server's `retryAfterSeconds` (1 by default; a demo may retry sooner). */
  retryScale?: number;
  /** Retries a pending join after this many seconds instead (simulations only: tests need not wait 30 s). */
  retryAfterSeconds?: number;
}): Promise<PxeOutcome> {
  const { machine } = options;
  while (!options.signal?.aborted) {
    const attempt = await prepareJoinAttempt({
      token: machine.token,
      trust: options.trust,
      claims: machine.claims,
      role: 'discovery',
      attestor: 'discovery',
      keys: machine.keys,
    });
    try {
      const answer = await sendJoin({ serverUrl: options.serverUrl, attempt, trust: options.trust, role: 'ramdisk', fetch: options.fetch });
      if (answer.status !== 'pending') return { kind: 'joined', nodeId: answer.nodeId };
      const retryAfter = options.retryAfterSeconds ?? answer.retryAfterSeconds * (options.retryScale ?? 1);
      options.events?.onPending?.(machine, answer.requestId, retryAfter);
      await sleep(retryAfter * 1000, options.signal);
    } catch (error) {
      if (error instanceof JoinRefusedError && error.status === 403) return { kind: 'refused' };
      // A race (409) or a server error: the agent retries like any deferral.
      if (error instanceof JoinRefusedError && (error.status === 409 || error.status >= 500)) {
        await sleep(1000, options.signal);
        continue;
      }
      return { kind: 'failed', message: (error as Error).message };
    }
  }
  return { kind: 'failed', message: 'stopped' };
}

/** Runs every machine at once over keep-alive connections; resolves when each is admitted or refused. */
export async function runPxeMachines(options: Omit<Parameters<typeof runPxeMachine>[0], 'machine' | 'fetch'> & { machines: PxeMachine[] }) {
  const client = keepAliveFetch(Math.min(64, options.machines.length));
  try {
    return await Promise.all(
      options.machines.map(async (machine) => {
        const outcome = await runPxeMachine({ ...options, machine, fetch: client.fetch });
        options.events?.onDone?.(machine, outcome);
        return outcome;
      }),
    );
  } finally {
    client.close();
  }
}
