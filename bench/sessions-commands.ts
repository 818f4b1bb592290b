/**
 * The command case of `bench:sessions`: one command (`--command`, `bcd.doctor` by default) enqueued to every
 * node of the pool as one batch while every session is open, through the same domain call as tRPC, REST and
 * the CLI (server/commands/enqueue.ts), timed until the batch reports every command answered, with the server
 * CPU per command beside a renewal's. The client processes' session loops run the agent's command runner
 * (agent/commands), whose doctor answers a small report.
 */
import { loadavg } from 'node:os';
import type { Principal } from '../server/authz/principal';
import type { Db } from '../server/db/client';
import { enqueueCommand } from '../server/commands/enqueue';
import { getBatch } from '../server/commands/queries';
import { COMMAND_KINDS } from '../protocol/command-wire';
import { log, waitFor } from './sessions-drive';

/** What the case needs of the run. */
interface CommandRun {
  db: Db;
  /** An admin of the pool's tenant. */
  operator: Principal;
  tenantId: string;
  poolId: string;
  sessions: number;
  cpu: () => { api: number; gateway: number; pg: number };
  settle: () => Promise<number>;
}

/** `--command`'s value as a kind; null for `none`. */
export function commandKindOf(value: string | undefined): string | null {
  if (value === 'none') return null;
  if (!(COMMAND_KINDS as readonly string[]).includes(value ?? ''))
    throw new Error(`--command must be none or one of ${COMMAND_KINDS.join(', ')} (bcd.renew and trust.refresh change the sessions)`);
  return value!;
}

export async function commandCase(run: CommandRun, kind: string) {
  const cpu = run.cpu();
  const loadBefore = loadavg()[0]!;
  log(`Sending ${kind} to the connected nodes of the pool (${run.sessions} sessions; one batch)…`);
  const started = performance.now();
  const { batch } = await enqueueCommand(run.db, run.operator, {
    tenantId: run.tenantId,
    matching: { poolId: run.poolId, connected: true },
    kind,
    timeoutSeconds: 300,
  });
  const enqueueSeconds = (performance.now() - started) / 1000;
  const answered = async () => {
    const now = await getBatch(run.db, run.operator, { tenantId: run.tenantId, batchId: batch!.id });
    return now.counts.succeeded + now.counts.failed + now.counts.rejected + now.counts.expired;
  };
  await waitFor(`${kind} commands answered`, batch!.total, answered);
  const seconds = (performance.now() - started) / 1000;
  const settledPages = await run.settle();
  const now = run.cpu();
  const final = await getBatch(run.db, run.operator, { tenantId: run.tenantId, batchId: batch!.id });
  const perCommand = (cpuSeconds: number) => (cpuSeconds / final.total) * 1000;
  const spent = { gateway: now.gateway - cpu.gateway, api: now.api - cpu.api, pg: now.pg - cpu.pg };
  const serverMs = perCommand(spent.gateway + spent.api + spent.pg);
  log(
    `${kind} to ${final.total} nodes: all answered ${seconds.toFixed(1)} s after the enqueue began (the enqueue ${enqueueSeconds.toFixed(1)} s); ` +
      `${JSON.stringify(final.counts)}; ${serverMs.toFixed(3)} ms of server CPU per command (GIN pending pages merged at the end: ${settledPages})`,
  );
  return {
    kind,
    total: final.total,
    counts: final.counts,
    seconds,
    enqueueSeconds,
    serverMs,
    perCommand,
    spent,
    loadBefore,
    loadAfter: loadavg()[0]!,
  };
}

type CommandFigures = Awaited<ReturnType<typeof commandCase>>;

/** The output line of the command case, its CPU beside a renewal's and a join's of the same run. */
export function commandLine(r: CommandFigures, renewServerMs: number, joinServerMs: number): string {
  const ms = (cpuSeconds: number) => r.perCommand(cpuSeconds).toFixed(3);
  return (
    `command to every node          ${r.kind} to ${r.total} nodes: all answered ${r.seconds.toFixed(1)} s after the enqueue began ` +
    `(the enqueue itself ${r.enqueueSeconds.toFixed(1)} s; goal <= 60 s), ${r.counts.succeeded} succeeded, ${r.counts.failed} failed, ` +
    `${r.counts.rejected} rejected, ${r.counts.expired} expired; server CPU ${r.serverMs.toFixed(3)} ms per command (gateway ${ms(r.spent.gateway)}, ` +
    `API ${ms(r.spent.api)}, PostgreSQL ${ms(r.spent.pg)}) = ${(r.serverMs / renewServerMs).toFixed(2)}x a renewal on a session, ` +
    `${(r.serverMs / joinServerMs).toFixed(2)}x a join; load average ${r.loadBefore.toFixed(1)} before, ${r.loadAfter.toFixed(1)} after\n`
  );
}
