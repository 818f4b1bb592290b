/**
 * The trust rotation cases of `bench:sessions`: a rotation step (prepare, or activate) taken with every session
 * open, timed until each session heard the new trust set in a `trust` event, with the server CPU per event.
 * The steps go through the same domain calls as the CLI, tRPC and REST (server/pki/rotation/rotation.ts).
 */
import { loadavg } from 'node:os';
import type { Principal } from '../server/authz/principal';
import type { Db } from '../server/db/client';
import { PKI_KEY_KINDS, type PkiKeyKind } from '../server/pki/rotation/kinds';
import { activateRotation, prepareRotation } from '../server/pki/rotation/rotation';
import { log, waitFor } from './sessions-drive';

/** What a step needs of the run: the database, the root admin, the open sessions and the server's CPU. */
export interface RotationRun {
  db: Db;
  secret: string;
  rootAdmin: Principal;
  sessions: number;
  /** CPU seconds used so far by each server process (tree). */
  cpu: () => { api: number; gateway: number; pg: number };
  /** Merges the GIN indexes' pending lists (the phase's own deferred index writes); answers the pages merged. */
  settle: () => Promise<number>;
  /** How many open sessions heard trust set `version` (or a newer one). */
  heard: (version: number) => Promise<number>;
}

type RotationStep = 'prepare' | 'activate';

/** `--rotate`'s value as a key kind; null for `none`. */
export function rotateKind(value: string | undefined): PkiKeyKind | null {
  if (value === 'none') return null;
  if (!PKI_KEY_KINDS.includes(value as PkiKeyKind)) throw new Error(`--rotate must be none or one of ${PKI_KEY_KINDS.join(', ')}`);
  return value as PkiKeyKind;
}

/**
 * Takes `step` of a `kind` rotation and waits until every open session heard the new trust set. Null when this
 * build refuses the step (the reason is logged).
 */
export async function trustEventCase(run: RotationRun, kind: PkiKeyKind, step: RotationStep) {
  const cpu = run.cpu();
  const loadBefore = loadavg()[0]!;
  log(`${step === 'prepare' ? 'Preparing' : 'Activating'} a ${kind} rotation with ${run.sessions} sessions open…`);
  const started = performance.now();
  let version: number;
  try {
    const take = step === 'prepare' ? prepareRotation : activateRotation;
    version = (await take(run.db, run.rootAdmin, { kind, secret: run.secret })).trustVersion;
  } catch (error) {
    log(`rotation case (${step}) skipped: ${(error as Error).message}`);
    return null;
  }
  const stepSeconds = (performance.now() - started) / 1000;
  await waitFor(`sessions that heard trust version ${version}`, run.sessions, () => run.heard(version));
  const seconds = (performance.now() - started) / 1000;
  // Recording every node's trust version left index entries pending: they are this step's cost.
  const settledPages = await run.settle();
  const now = run.cpu();
  const spent = { api: now.api - cpu.api, pg: now.pg - cpu.pg, gateway: now.gateway - cpu.gateway };
  const perEvent = (cpuSeconds: number) => (cpuSeconds / run.sessions) * 1000;
  const serverMs = perEvent(spent.api + spent.pg + spent.gateway);
  log(
    `every session heard trust version ${version} ${seconds.toFixed(1)} s after the step; ${serverMs.toFixed(3)} ms of server CPU per event (GIN pending pages merged at the end: ${settledPages})`,
  );
  return { kind, step, version, stepSeconds, seconds, serverMs, perEvent, spent, loadBefore, loadAfter: loadavg()[0]! };
}

type TrustEventFigures = NonNullable<Awaited<ReturnType<typeof trustEventCase>>>;

/** The output line of a trust event case, its CPU beside a renewal's and a join's of the same run. */
export function trustEventLine(r: TrustEventFigures, sessions: number, renewServerMs: number, joinServerMs: number): string {
  const ms = (cpuSeconds: number) => r.perEvent(cpuSeconds).toFixed(3);
  return (
    `trust rotation (${r.kind} ${r.step})  all ${sessions} sessions heard trust version ${r.version} ${r.seconds.toFixed(1)} s after the step began ` +
    `(the step itself ${r.stepSeconds.toFixed(1)} s; goal <= 60 s); server CPU ${r.serverMs.toFixed(3)} ms per trust event ` +
    `(gateway ${ms(r.spent.gateway)}, API ${ms(r.spent.api)}, PostgreSQL ${ms(r.spent.pg)}) = ${(r.serverMs / renewServerMs).toFixed(3)}x a renewal on a session, ` +
    `${(r.serverMs / joinServerMs).toFixed(3)}x a join; load average ${r.loadBefore.toFixed(1)} before, ${r.loadAfter.toFixed(1)} after\n`
  );
}
