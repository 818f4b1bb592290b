import type { JoinTrust } from '../join';
import { newPxeMachine, runPxeMachine, type PxeMachine } from './pxe';

/** How a simulated boot ended: the lease's token id, and the join request its ramdisk is waiting in. */
interface SiteBootOutcome {
  mac: string;
  tokenId: string;
  requestId: string | null;
  /** Set when the ramdisk's join was refused or failed instead of waiting for approval. */
  failure?: string;
}

const json = async (response: Response) => (await response.json()) as Record<string, unknown>;

/**
 * Simulated PXE boots served by a running site agent (`bcd site`): for each machine, the DHCP server's part
 * (`POST {leaseUrl}/v1/leases` with its MAC, `ip` and `bootLeaseEpoch`), then the ramdisk's (`GET
 * {bootUrl}/v1/boot/<mac>/token`, once) and its join through the discovery attestor at `serverUrl` (the gateway),
 * with the agent/sim/pxe.ts code path, until its first answer: the join request it waits in.
 */
export async function simulateSiteBoots(options: {
  leaseUrl: string;
  bootUrl?: string;
  serverUrl: string;
  trust: JoinTrust;
  count: number;
  /** The lease epoch (1 unless given); the same epoch again is a retry of the same leases. */
  bootLeaseEpoch?: number;
  /** The address the boot listener sees the ramdisk at (127.0.0.1 for a simulation on this host). */
  ip?: string;
  /** The first machine's index (machines differ by index: their MACs and claims). */
  firstIndex?: number;
  fetch?: typeof fetch;
}): Promise<SiteBootOutcome[]> {
  const machines = Array.from({ length: options.count }, (_, i) => newPxeMachine((options.firstIndex ?? 0) + i));
  return Promise.all(
    machines.map(async (machine): Promise<SiteBootOutcome> => {
      const leased = await fetch(`${options.leaseUrl}/v1/leases`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ mac: machine.mac, ip: options.ip ?? '127.0.0.1', bootLeaseEpoch: options.bootLeaseEpoch ?? 1 }),
      });
      const lease = await json(leased);
      if (leased.status !== 200) return { mac: machine.mac, tokenId: '', requestId: null, failure: `lease: ${String(lease.message)}` };
      const fetched = await fetch(`${options.bootUrl ?? options.leaseUrl}/v1/boot/${machine.mac}/token`);
      if (fetched.status !== 200)
        return { mac: machine.mac, tokenId: String(lease.tokenId), requestId: null, failure: 'no token for the ramdisk' };
      const pxe: PxeMachine = { ...machine, token: (await fetched.text()).trim() };
      const stop = new AbortController();
      let requestId: string | null = null;
      const outcome = await runPxeMachine({
        serverUrl: options.serverUrl,
        trust: options.trust,
        machine: pxe,
        fetch: options.fetch,
        signal: stop.signal,
        events: { onPending: (_, id) => ((requestId = id), stop.abort()) },
      });
      const failure = requestId ? undefined : outcome.kind === 'failed' ? outcome.message : outcome.kind;
      return { mac: machine.mac, tokenId: String(lease.tokenId), requestId, ...(failure ? { failure } : {}) };
    }),
  );
}
