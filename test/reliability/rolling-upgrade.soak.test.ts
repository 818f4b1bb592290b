import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JoinTrust } from '../../agent/join';
import type { GatewayTarget } from '../../agent/renew/gateway-client';
import type { LoadedIdentity } from '../../agent/renew/identity';
import { createDb, type Db } from '../../server/db/client';
import { migrate } from '../../server/db/migrate';
import { createFreshDatabase, dropDatabase } from '../db';
import { spawnGateway, type SpawnedGateway } from '../gateway-process';
import { newServerSecret, startServerProcess, type ServerProcess } from '../server-process';
import { joinedMachine, joinOnce, keepRunning, renewOnceRecorded, type Call } from './failover-load';
import { buildPreviousRelease, findPreviousRelease, removePreviousRelease } from './previous-release';

// The rolling-upgrade drill: the previous release (test/reliability/previous-release.ts says which commit that is)
// built from git history serves a database migrated to its own schema under join and renewal load; the current
// release's migrations are applied while it serves; the current release starts beside it on the same database;
// the load goes on through both; the previous release is drained and stopped. Nothing either release should admit
// may be refused, and machines joined through the previous release renew through the current one (and
// certificates the current one issued renew through the previous one while both serve). Prints each phase's time.

const JOIN_WORKERS = 3;
const RENEWING_NODES = 6;
/** How long the load runs in each phase (previous release alone; after the migration; both; current alone). */
const PHASE_MS = 6_000;
const MAX_USES = 10_000;
/**
 * Both releases' settings. The per-node renewal limit (12 an hour by default) is lifted: the drill renews each node
 * every few hundred milliseconds, and a refusal by the limit would be right, not an upgrade's fault.
 */
const env = { BETTER_COMPUTE_RENEWALS_PER_NODE_PER_HOUR: '100000' };

const release = findPreviousRelease();
const say = (line: string) => process.stdout.write(`upgrade: ${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const secret = newServerSecret();
const databaseName = `upgrade_${process.pid}`;
let databaseUrl: string;
let previousDir: string | undefined;
let db: Db | undefined;
const servers: ServerProcess[] = [];
const gateways: SpawnedGateway[] = [];
const timings: Array<[string, number]> = [];

async function timed<T>(phase: string, run: () => Promise<T> | T): Promise<T> {
  const start = Date.now();
  const result = await run();
  timings.push([phase, Date.now() - start]);
  say(`${phase}: ${Date.now() - start} ms`);
  return result;
}

afterAll(async () => {
  await Promise.all(gateways.map((g) => g.stop('SIGKILL')));
  await Promise.all(servers.map((s) => s.stop()));
  await db?.$disconnect().catch(() => {});
  if (databaseUrl) await dropDatabase(databaseName).catch(() => {});
  if (previousDir) removePreviousRelease(previousDir);
  say(`phases: ${timings.map(([phase, ms]) => `${phase} ${ms} ms`).join('; ')}`);
}, 60_000);

describe.skipIf('skip' in release)(
  `a rolling upgrade from the previous release (${'skip' in release ? release.skip : release.describe})`,
  () => {
    const previous = release as Exclude<typeof release, { skip: string }>;
    let setup: {
      token: string;
      tokenId: string;
      trust: JoinTrust;
      credentials: { chainPem: string; keyPem: string; nodeCaPem: string };
      servingCaPin: string;
    };

    beforeAll(async () => {
      expect(previous.newMigrations.length).toBeGreaterThan(0);
      say(`previous release ${previous.describe}; new migrations: ${previous.newMigrations.join(', ')}`);
      previousDir = await timed('build the previous release (git archive, Prisma client)', () =>
        buildPreviousRelease(previous, ['test/reliability/upgrade-setup.ts']),
      );
      databaseUrl = await createFreshDatabase(databaseName);
      // Its own start migrates the empty database to its schema and bootstraps it (PKI, root tenant).
      servers.push(
        await timed('start the previous release on an empty database', () =>
          startServerProcess({ root: previousDir, databaseUrl, secret, env }),
        ),
      );
      const out = execFileSync(process.execPath, ['--import', 'tsx', 'test/reliability/upgrade-setup.ts'], {
        cwd: previousDir,
        encoding: 'utf8',
        env: { ...process.env, DATABASE_URL: databaseUrl, BETTER_COMPUTE_SECRET: secret, UPGRADE_MAX_USES: String(MAX_USES) },
      });
      const parsed = JSON.parse(out.trim().split('\n').pop()!);
      setup = {
        ...parsed,
        trust: { ...parsed.trust, signingCertificateDer: Buffer.from(parsed.trust.signingCertificateDer, 'base64') },
      };
      // The agent code in this process logs each failed call; none should fail, but the log would bury the report.
      process.env.BETTER_COMPUTE_LOG_LEVEL = 'error';
    }, 180_000);

    it('refuses nothing either release admits, across the migration and the switch', { timeout: 200_000 }, async () => {
      const applied = async () => {
        const client = createDb(databaseUrl, { max: 1 });
        try {
          const rows = await client.$queryRawUnsafe<Array<{ name: string }>>(
            'SELECT migration_name AS name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL',
          );
          return rows.map((r) => r.name);
        } finally {
          await client.$disconnect();
        }
      };
      // The database is on the previous release's schema: none of the new migrations is there.
      expect((await applied()).filter((name) => previous.newMigrations.includes(name))).toEqual([]);

      const oldGateway = await spawnGateway({ credentials: setup.credentials, apiUrl: servers[0]!.url });
      gateways.push(oldGateway);
      const via = {
        old: { gatewayUrl: oldGateway.url, servingCaPin: setup.servingCaPin } as GatewayTarget,
        new: undefined as GatewayTarget | undefined,
      };
      const calls = { old: [] as Call[], new: [] as Call[] };
      const inFlight = { old: 0, new: 0 };
      let serving: Array<'old' | 'new'> = ['old'];
      let turn = 0;
      /** Which release issued each certificate (serial), to see renewals cross releases. */
      const issuedBy = new Map<string, 'old' | 'new'>();
      const pick = () => serving[turn++ % serving.length]!;
      async function through<T>(label: 'old' | 'new', run: (target: GatewayTarget, sink: Call[]) => Promise<T>) {
        inFlight[label]++;
        try {
          return await run(via[label]!, calls[label]);
        } finally {
          inFlight[label]--;
        }
      }

      // Machines joined through the previous release before anything changes: they renew all along.
      const renewing: LoadedIdentity[] = [];
      for (let i = 0; i < RENEWING_NODES; i++) {
        const machine = await joinedMachine(via.old, setup.token, setup.trust, calls.old);
        renewing.push(machine.identity);
        issuedBy.set(machine.identity.leaf.serialNumber.toLowerCase(), 'old');
        rmSync(machine.dir, { recursive: true, force: true });
      }
      const joinedThroughOld = renewing.map((r) => r.identity.nodeId);

      let stopped = false;
      const load = Promise.all([
        keepRunning(
          JOIN_WORKERS,
          () => stopped,
          async () => {
            const label = pick();
            const { call } = await through(label, (target, sink) => joinOnce(target, setup.token, setup.trust, sink));
            if (call.serial) issuedBy.set(call.serial, label);
            if (call.status !== 200) await sleep(100);
          },
        ),
        keepRunning(
          RENEWING_NODES,
          () => stopped,
          async (i) => {
            const label = pick();
            const before = renewing[i]!;
            renewing[i] = await through(label, (target, sink) => renewOnceRecorded(before, target, sink));
            if (renewing[i] !== before) issuedBy.set(renewing[i]!.leaf.serialNumber.toLowerCase(), label);
            await sleep(50);
          },
        ),
      ]);
      const marks: Record<string, number> = { start: Date.now() };

      await sleep(PHASE_MS);
      // The new release's migrations, applied while the previous release serves (as a new instance's start does).
      marks.migrating = Date.now();
      const result = await timed('apply the new migrations under load', () => migrate(databaseUrl, { log: say }));
      marks.migrated = Date.now();
      expect(result.applied).toEqual(previous.newMigrations);
      await sleep(PHASE_MS);

      // The current release beside it, on the same database, with a gateway of its own; the load goes to both.
      const current = await timed('start the current release beside it', () => startServerProcess({ databaseUrl, secret, env }));
      servers.push(current);
      const newGateway = await spawnGateway({ credentials: setup.credentials, apiUrl: current.url });
      gateways.push(newGateway);
      via.new = { gatewayUrl: newGateway.url, servingCaPin: setup.servingCaPin };
      marks.both = Date.now();
      serving = ['old', 'new'];
      await sleep(PHASE_MS);

      // Drain the previous release: no new calls, the ones in flight end, then SIGTERM to its gateway and server.
      serving = ['new'];
      await timed('drain and stop the previous release', async () => {
        while (inFlight.old > 0) await sleep(20);
        await oldGateway.stop('SIGTERM');
        await servers[0]!.stop('SIGTERM');
      });
      marks.newOnly = Date.now();
      await sleep(PHASE_MS);
      stopped = true;
      await load;
      expect(current.child.exitCode, 'the current release exited during the drill').toBeNull();

      const all = [...calls.old, ...calls.new];
      const phaseOf = (c: Call) =>
        c.sentAt >= marks.newOnly! ? 'new only' : c.sentAt >= marks.both! ? 'both' : c.sentAt >= marks.migrating! ? 'migrated' : 'old only';
      const table = new Map<string, number>();
      for (const [label, list] of Object.entries(calls))
        for (const c of list) {
          const key = `${phaseOf(c)} ${c.kind} via ${label} ${c.status}`;
          table.set(key, (table.get(key) ?? 0) + 1);
        }
      say(`calls by phase, kind, release and status: ${JSON.stringify(Object.fromEntries(table))}`);

      // Nothing refused or failed: every join on the token with uses to spare and every renewal of a valid
      // certificate was answered 200, through either release, in every phase.
      expect(
        all.filter((c) => c.status !== 200).map((c) => `${phaseOf(c)} ${c.kind} ${c.status} ${c.body.toString().slice(0, 200)}`),
      ).toEqual([]);
      // Each phase was exercised: the previous release served on the migrated schema, both served together.
      expect(calls.old.filter((c) => c.sentAt >= marks.migrated! && c.kind === 'join').length).toBeGreaterThan(0);
      expect(calls.old.filter((c) => c.sentAt >= marks.migrated! && c.kind === 'renew').length).toBeGreaterThan(0);
      expect(calls.new.filter((c) => c.sentAt < marks.newOnly! && c.kind === 'join').length).toBeGreaterThan(0);
      // Renewals crossed releases both ways while both served.
      const renewals = (label: 'old' | 'new') => calls[label].filter((c) => c.kind === 'renew' && c.status === 200);
      expect(renewals('new').filter((c) => issuedBy.get(c.from!) === 'old').length).toBeGreaterThan(0);
      expect(renewals('old').filter((c) => issuedBy.get(c.from!) === 'new').length).toBeGreaterThan(0);
      // Every machine joined through the previous release renewed through the current one after the switch.
      const renewedByNew = new Set(
        renewals('new')
          .filter((c) => c.sentAt >= marks.newOnly!)
          .map((c) => c.nodeId),
      );
      expect(joinedThroughOld.filter((id) => !renewedByNew.has(id))).toEqual([]);

      // Every 200 is in the database, no serial twice, and the token counted each admission once.
      db = createDb(databaseUrl, { max: 2 });
      const admitted = all.filter((c) => c.status === 200);
      const serials = admitted.map((c) => c.serial!);
      expect(new Set(serials).size).toBe(serials.length);
      const rows = await db.nodeCert.findMany({ where: { serial: { in: serials } }, select: { serial: true, nodeId: true } });
      const stored = new Map(rows.map((r) => [r.serial.toLowerCase(), r.nodeId]));
      expect(admitted.filter((c) => stored.get(c.serial!) !== c.nodeId).map((c) => `${c.kind} ${c.serial}`)).toEqual([]);
      const joins = admitted.filter((c) => c.kind === 'join').length;
      expect((await db.joinToken.findUniqueOrThrow({ where: { id: setup.tokenId } })).usesLeft).toBe(MAX_USES - joins);
      say(
        `${admitted.length} calls admitted (${joins} joins, ${admitted.length - joins} renewals), ` +
          `${calls.old.length} through the previous release, ${calls.new.length} through the current one; load ${Date.now() - marks.start!} ms`,
      );
    });
  },
);
