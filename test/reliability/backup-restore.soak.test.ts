import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JoinTrust } from '../../agent/join';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import type { GatewayTarget } from '../../agent/renew/gateway-client';
import type { LoadedIdentity } from '../../agent/renew/identity';
import { runSessionLoop } from '../../agent/session/loop';
import { openSession, SessionRefusedError } from '../../agent/session/session-client';
import { RENEW_REFUSED } from '../../protocol/renew-wire';
import { principalOf } from '../../server/authz/principal';
import { createDb, type Db } from '../../server/db/client';
import { newId } from '../../server/ids';
import { loadPki } from '../../server/pki/bundle/store';
import { approveJoinRequest } from '../../server/requests/decisions';
import { randomMac } from '../discovery-harness';
import { spawnGateway, type SpawnedGateway } from '../gateway-process';
import { machineClaims } from '../join-harness';
import { defaultPool, newServerSecret, startServerProcess, type ServerProcess } from '../server-process';
import {
  BASE,
  connectedSeenBy as connectedNodes,
  joinedMachine,
  joinOnce,
  keepRunning,
  renewOnceRecorded,
  type Call,
} from './failover-load';
import { chownTree, runAs } from './ha-postgres';
import { startPgCluster, type PgCluster } from './pg-cluster';
import { DATABASE, discoveryJoin, gatewayCredentials, issueToken, startServingInstance, type ServingInstance } from './backup-drill';

// The backup and restore drill: a running instance on PostgreSQL 15 with joined nodes, open sessions and a
// queued join request is dumped with pg_dump (custom format) while it serves joins; the dump is restored into
// an empty database on a new cluster, and the product is started on it with the same BETTER_COMPUTE_SECRET. Nodes
// renew with their certificates from before the backup, sessions come back on their own, the queued request is
// approved and the machine admitted. What was issued after the dump is unknown to the restored database: those
// renewals and sessions are refused until the machine joins again. A start with another secret refuses to run.
// Prints the dump's size and time and the restore's time.

/** BACKUP_DRILL_NODES=N joins N machines before the backup instead (a larger dump to measure). */
const NODES = Number(process.env.BACKUP_DRILL_NODES) || 8;
const SESSION_NODES = 3;
const secret = newServerSecret();
const env = { BETTER_COMPUTE_SESSION_HEARTBEAT_SECONDS: '1', BETTER_COMPUTE_SESSION_GRACE_SECONDS: '3' };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const say = (line: string) => process.stdout.write(`backup: ${line}\n`);

let source: PgCluster;
let restored: PgCluster;
let sourceDb: Db;
let restoredDb: Db;
const servers: ServerProcess[] = [];
const gateways: SpawnedGateway[] = [];
const sessionLoops = new AbortController();
let trust: JoinTrust;
let oldCredentials: ServingInstance['credentials'];
let target: GatewayTarget;
let tenantId: string;
let apiKey: string;
let bigToken: string;
/** Machines joined before the dump; those past SESSION_NODES renewed once before it too. */
const machines: LoadedIdentity[] = [];
const sessionNodes: string[] = [];
/** Each machine's hardware claims, as it sends them on every join. */
const claimsOf: Array<ReturnType<typeof machineClaims>> = [];
/** A machine that renewed after the dump, and one that joined after it: the restored database knows neither certificate. */
let renewedAfter: LoadedIdentity;
let joinedAfter: LoadedIdentity;
let pending: { token: string; mac: string; keys: ReturnType<typeof generateNodeKeyAndCsr>; requestId: string };
const joinsDuringDump: Call[] = [];
let bundleRows: unknown[];
const figures: string[] = [];
const dirs: string[] = [];

/** The connected nodes as `api` answers them (REST), or null while it cannot. */
const connectedSeenBy = (api: ServerProcess) => connectedNodes(api.url, tenantId, apiKey);

beforeAll(async () => {
  const first = await startServingInstance(secret, env);
  ({ cluster: source, db: sourceDb, trust, target, tenantId, apiKey, credentials: oldCredentials } = first);
  servers.push(first.server);
  gateways.push(first.gateway);
  process.env.BETTER_COMPUTE_LOG_LEVEL = 'error';
  bigToken = await issueToken(sourceDb);
  const calls: Call[] = [];
  for (let i = 0; i < NODES; i++) {
    claimsOf.push(machineClaims());
    const machine = await joinedMachine(target, bigToken, trust, calls, claimsOf[i]);
    dirs.push(machine.dir);
    if (i < SESSION_NODES) {
      sessionNodes.push(machine.identity.identity.nodeId);
      void runSessionLoop({
        identityDir: machine.dir,
        ...target,
        basePath: BASE,
        agentVersion: '0.1.0',
        signal: sessionLoops.signal,
        startJitterMs: 0,
        log: () => {},
      });
      machines.push(machine.identity);
    } else machines.push(await renewOnceRecorded(machine.identity, target, calls));
  }
  expect(calls.map((c) => c.status)).toEqual(calls.map(() => 200));
  sessionNodes.sort();
  for (const start = Date.now(); (await connectedSeenBy(servers[0]!))?.join() !== sessionNodes.join(); await sleep(250))
    if (Date.now() - start > 30_000) throw new Error('the sessions did not open before the backup');
  const mac = randomMac();
  pending = { token: await issueToken(sourceDb, { discoveryMac: mac }), mac, keys: generateNodeKeyAndCsr(), requestId: '' };
  const queued = await discoveryJoin(target, trust, pending, pending.keys);
  expect(queued.status).toBe('pending');
  pending.requestId = queued.requestId!;

  // The backup, taken while the instance serves joins.
  const dumpFile = path.join(source.root, 'better-compute.dump');
  const databaseBytes = (await sourceDb.$queryRaw<[{ size: bigint }]>`SELECT pg_database_size(current_database()) AS size`)[0].size;
  let dumping = true;
  const load = keepRunning(
    2,
    () => !dumping,
    async () => void (await joinOnce(target, bigToken, trust, joinsDuringDump)),
  );
  const dumpStart = performance.now();
  await source.run('pg_dump', ['--format=custom', `--file=${dumpFile}`, `--dbname=${source.urlOf(DATABASE)}`]);
  const dumpMs = performance.now() - dumpStart;
  dumping = false;
  await load;
  bundleRows = await sourceDb.$queryRaw`SELECT * FROM pki_bundles ORDER BY 1`;
  figures.push(
    `database ${(Number(databaseBytes) / 2 ** 20).toFixed(1)} MiB; pg_dump --format=custom ${(statSync(dumpFile).size / 1024).toFixed(0)} KiB ` +
      `in ${dumpMs.toFixed(0)} ms while ${joinsDuringDump.length} joins were sent`,
  );

  // After the backup: one machine renews, another joins. Then the host is lost.
  renewedAfter = await renewOnceRecorded(machines[NODES - 1]!, target, calls);
  expect(renewedAfter.leaf.serialNumber).not.toBe(machines[NODES - 1]!.leaf.serialNumber);
  claimsOf.push(machineClaims());
  const late = await joinedMachine(target, bigToken, trust, calls, claimsOf[NODES]);
  dirs.push(late.dir);
  joinedAfter = late.identity;
  await gateways[0]!.stop('SIGKILL');
  await servers[0]!.stop();
  await sourceDb.$disconnect();

  restored = await startPgCluster();
  await restored.createDatabase(DATABASE);
  const copy = path.join(restored.root, 'better-compute.dump');
  copyFileSync(dumpFile, copy);
  chownTree(restored.root, runAs());
  await source.stop();
  const restoreStart = performance.now();
  await restored.run('pg_restore', ['--exit-on-error', '--no-owner', `--dbname=${restored.urlOf(DATABASE)}`, copy]);
  figures.push(`pg_restore into an empty database on a new cluster: ${(performance.now() - restoreStart).toFixed(0)} ms`);
  restoredDb = createDb(restored.urlOf(DATABASE), { max: 4 });
  const [nodes, certs, events, audit] = await Promise.all([
    restoredDb.node.count(),
    restoredDb.nodeCert.count(),
    restoredDb.event.count(),
    restoredDb.auditEntry.count(),
  ]);
  figures.push(`restored: ${nodes} nodes, ${certs} certificates, ${events} events, ${audit} audit entries`);
}, 240_000);

afterAll(async () => {
  sessionLoops.abort();
  await Promise.all(gateways.map((g) => g.stop('SIGKILL')));
  await Promise.all(servers.map((s) => s.stop()));
  await sourceDb?.$disconnect().catch(() => {});
  await restoredDb?.$disconnect().catch(() => {});
  await source?.stop();
  await restored?.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  for (const line of figures) say(line);
}, 60_000);

describe('a pg_dump of a running instance, restored into a fresh database', () => {
  it.each([
    ['another BETTER_COMPUTE_SECRET', {}],
    // Forgotten on the new host: the start then makes a development secret in its data directory.
    ['no BETTER_COMPUTE_SECRET', { BETTER_COMPUTE_SECRET: '' }],
  ] as const)('refuses to start with %s, says why, and changes nothing', { timeout: 90_000 }, async (_, unset) => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'bc-restore-data-'));
    dirs.push(dataDir);
    const start = startServerProcess({
      databaseUrl: restored.urlOf(DATABASE),
      secret: newServerSecret(),
      env: { ...env, BETTER_COMPUTE_DATA_DIR: dataDir, ...unset },
    });
    const error = await start.then(
      (started) => {
        servers.push(started);
        return null;
      },
      (e: Error) => e,
    );
    expect(error?.message).toContain('Could not start: BETTER_COMPUTE_SECRET does not open the PKI bundle (wrong secret?)');
    expect(existsSync(path.join(dataDir, 'secret'))).toBe('BETTER_COMPUTE_SECRET' in unset);
    expect(await restoredDb.$queryRaw`SELECT * FROM pki_bundles ORDER BY 1`).toEqual(bundleRows);
  });

  it(
    'serves with the same secret: renewals, sessions and the queued request; later certificates are refused',
    { timeout: 150_000 },
    async () => {
      // Another NEXTAUTH_SECRET: it only signs console sign-ins, which end; agents and API keys do not use it.
      const api = await startServerProcess({
        databaseUrl: restored.urlOf(DATABASE),
        secret,
        env: { ...env, NEXTAUTH_SECRET: newServerSecret() },
      });
      servers.push(api);
      const startedAt = Date.now();
      // The gateway's directory is not part of the backup: a new serving certificate from the restored PKI, at the
      // address the agents use (they pin the serving CA, which the dump holds).
      const fresh = gatewayCredentials(await loadPki(restoredDb, secret));
      expect(fresh.chainPem).not.toBe(oldCredentials.chainPem);
      gateways.push(await spawnGateway({ credentials: fresh, apiUrl: api.url, port: gateways[0]!.port }));

      const admittedDuring = joinsDuringDump.filter((c) => c.status === 200);
      const kept = await restoredDb.node.count({ where: { id: { in: admittedDuring.map((c) => c.nodeId!) } } });
      figures.push(`joins answered 200 while pg_dump ran: ${admittedDuring.length}, of which in the dump: ${kept}`);
      // The dump is one snapshot: the token's uses left match the nodes it joined, and each node has its certificate.
      const token = await restoredDb.joinToken.findFirstOrThrow({ where: { role: 'node', poolId: { not: null } } });
      const joined = await restoredDb.auditEntry.count({ where: { actor: `join-token:${token.id}`, action: 'node.joined' } });
      expect(token.usesLeft).toBe(token.maxUses - joined);
      expect(await restoredDb.node.count({ where: { role: 'node', certs: { none: {} } } })).toBe(0);

      // Every machine renews with the certificate it held at the backup; the new certificates are the restored database's.
      const calls: Call[] = [];
      for (const machine of machines.slice(SESSION_NODES, NODES - 1)) await renewOnceRecorded(machine, target, calls);
      expect(calls.map((c) => c.status)).toEqual(calls.map(() => 200));
      expect(await restoredDb.nodeCert.count({ where: { serial: { in: calls.map((c) => c.serial!) } } })).toBe(calls.length);

      // The agents' sessions come back by themselves, to the gateway at the same address.
      await expect.poll(() => connectedSeenBy(api), { timeout: 90_000, interval: 250 }).toEqual(sessionNodes);
      figures.push(`every session open again ${Date.now() - startedAt} ms after the restored instance listened`);

      // The queued request is still pending; approved on the restored instance, the same machine is admitted.
      const admin = principalOf('operator', newId('op'), [[tenantId, 'admin']]);
      const pool = await defaultPool(restoredDb);
      expect((await restoredDb.joinRequest.findUniqueOrThrow({ where: { id: pending.requestId } })).state).toBe('pending');
      await approveJoinRequest(restoredDb, admin, { tenantId, poolId: pool.id, requestId: pending.requestId, ttlSeconds: 3600 });
      const admitted = await discoveryJoin(target, trust, pending, pending.keys);
      expect(admitted).toMatchObject({ status: 'joined', role: 'ramdisk' });
      expect(await restoredDb.node.count({ where: { id: admitted.nodeId } })).toBe(1);

      // Issued after the backup, unknown to the restored database: renewals and sessions are refused, uniformly.
      const lastEvent = (await restoredDb.event.aggregate({ _max: { id: true } }))._max.id ?? 0n;
      const refused: Call[] = [];
      for (const machine of [renewedAfter, joinedAfter]) await renewOnceRecorded(machine, target, refused);
      expect(refused.map((c) => c.status)).toEqual([403, 403]);
      for (const c of refused) expect(c.body.equals(RENEW_REFUSED.body)).toBe(true);
      // What the operator finds them by: security.renew.refused with reason certificate-unknown (naming nothing, as
      // the caller proved nothing), and the gateway's call log, which names each peer's node.
      const refusals = () =>
        restoredDb.event
          .findMany({ where: { type: 'security.renew.refused', id: { gt: lastEvent } } })
          .then((events) => events.map((e) => (e.data as { reason: string }).reason));
      await expect.poll(refusals).toEqual(['certificate-unknown', 'certificate-unknown']);
      const refusedPeers = gateways[1]!.lines
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { peer?: string; path: string; status: number })
        .filter((l) => l.path.endsWith('/v1/renew') && l.status === 403)
        .map((l) => l.peer);
      for (const machine of [renewedAfter, joinedAfter])
        expect(refusedPeers).toContainEqual(expect.stringContaining(machine.identity.nodeId));
      for (const machine of [renewedAfter, joinedAfter])
        await expect(openSession(target, machine, { basePath: BASE, agentVersion: '0.1.0' })).rejects.toBeInstanceOf(SessionRefusedError);
      // Until the machine joins again. The one that renewed after the backup is a known machine with a new key:
      // a plain token refuses it (reclaim), a token with allowReclaim gives it its node back, a generation up.
      const refusedJoins: Call[] = [];
      await joinOnce(target, bigToken, trust, refusedJoins, claimsOf[NODES - 1]);
      expect(refusedJoins.map((c) => c.status)).toEqual([403]);
      const reclaimToken = await issueToken(restoredDb, { allowReclaim: true });
      const reclaimed = await joinedMachine(target, reclaimToken, trust, calls, claimsOf[NODES - 1]);
      dirs.push(reclaimed.dir);
      expect(reclaimed.identity.identity.nodeId).toBe(renewedAfter.identity.nodeId);
      // The one that joined after the backup is unknown hardware: any token joins it, as a new node.
      const joinedAgain = await joinedMachine(target, bigToken, trust, calls, claimsOf[NODES]);
      dirs.push(joinedAgain.dir);
      expect(joinedAgain.identity.identity.nodeId).not.toBe(joinedAfter.identity.nodeId);
      for (const machine of [reclaimed, joinedAgain])
        expect((await renewOnceRecorded(machine.identity, target, calls)).leaf.serialNumber).not.toBe(machine.identity.leaf.serialNumber);
    },
  );
});
