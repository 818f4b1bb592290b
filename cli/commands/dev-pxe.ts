import { randomUUID } from 'node:crypto';
import type { JoinTrust } from '../../agent/join';
import { newPxeMachine, runPxeMachines, type PxeMachine } from '../../agent/sim/pxe';
import { simulateSiteBoots } from '../../agent/sim/site-boot';
import { enc, type ApiClient } from '../client';
import { printJson } from '../output';

/**
 * `dev --sim N --pxe`: N simulated PXE machines. The site's boot step is played by this command (one
 * discovery token per machine, bound to its MAC); each machine then joins through the discovery attestor
 * with the real agent code, waits while its request is pending (retrying after `retryAfterSeconds`), and
 * finishes as soon as an operator approved it, or reports it refused.
 */
export async function simulatePxe(options: {
  client: ApiClient;
  serverUrl: string;
  trust: JoinTrust;
  tenant: string;
  site: string;
  count: number;
  json?: boolean;
  retryAfterSeconds?: number;
}) {
  const { client } = options;
  const tenantId = await client.tenantId(options.tenant);
  const machines: PxeMachine[] = [];
  for (let i = 0; i < options.count; i++) {
    const machine = newPxeMachine(i);
    const created = await client.post(
      'discoveryTokens.create',
      `/v1/tenants/${enc(tenantId)}/sites/${enc(options.site)}/discovery-tokens`,
      {
        mac: machine.mac,
        ip: `10.99.${Math.floor(i / 250)}.${(i % 250) + 1}`,
        workflowId: 'dev-sim-pxe',
        bootLeaseEpoch: 1,
        idempotencyKey: `dev-sim-pxe-${randomUUID()}`,
      },
    );
    machines.push({ ...machine, token: created.token! });
  }
  const waiting = new Set<number>();
  const started = performance.now();
  const outcomes = await runPxeMachines({
    serverUrl: options.serverUrl,
    trust: options.trust,
    machines,
    retryAfterSeconds: options.retryAfterSeconds,
    events: {
      onPending: (m, requestId, retry) => {
        if (waiting.has(m.index)) return;
        waiting.add(m.index);
        if (!options.json) process.stderr.write(`sim-${m.index} ${m.mac} waiting: ${requestId} (retrying every ${retry} s)\n`);
        if (waiting.size === machines.length && !options.json) {
          process.stderr.write(
            `All ${machines.length} machines wait. Approve them: better-compute join-requests approve --all-pending --tenant ${options.tenant} --pool <poolId>\n`,
          );
        }
      },
      onDone: (m, outcome) => {
        if (options.json) return;
        const text =
          outcome.kind === 'joined'
            ? `joined as ${outcome.nodeId}`
            : outcome.kind === 'refused'
              ? 'refused (rejected or expired)'
              : `failed: ${outcome.message}`;
        process.stdout.write(`sim-${m.index} ${m.mac} ${text}\n`);
      },
    },
  });
  const summary = {
    machines: machines.length,
    joined: outcomes.filter((o) => o.kind === 'joined').length,
    refused: outcomes.filter((o) => o.kind === 'refused').length,
    failed: outcomes.filter((o) => o.kind === 'failed').length,
    waitedForApproval: waiting.size,
    seconds: Math.round((performance.now() - started) / 10) / 100,
  };
  if (options.json) return printJson(summary);
  process.stdout.write(
    `joined ${summary.joined}, refused ${summary.refused}, failed ${summary.failed} of ${summary.machines} PXE machines in ${summary.seconds} s\n`,
  );
}

/**
 * `dev --sim N --pxe --site-agent URL`: the boot step is a running `bcd site`. Each simulated machine's lease is
 * posted to it (`POST URL/v1/leases`), its ramdisk fetches its token from it once and joins; the command ends when
 * every machine waits in the queue (or failed), printing the requests.
 */
export async function simulatePxeWithSiteAgent(options: {
  leaseUrl: string;
  serverUrl: string;
  trust: JoinTrust;
  count: number;
  json?: boolean;
}) {
  const boots = await simulateSiteBoots({
    ...options,
    leaseUrl: options.leaseUrl.replace(/\/+$/, ''),
    bootLeaseEpoch: Math.floor(Date.now() / 1000),
  });
  if (options.json) return printJson(boots);
  for (const boot of boots)
    process.stdout.write(
      `${boot.mac} token ${boot.tokenId || '-'}: ${boot.requestId ? `waiting in ${boot.requestId}` : `failed: ${boot.failure}`}\n`,
    );
}
