import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLeafNames } from '../../protocol/certificate-names';
import { newMachineRoot, run, startBcdServer, type BcdBuild, type BcdServer } from '../../test/bcd-build';
import { runCli } from '../../test/cli';
import { startBackground } from '../../test/daemon/background';
import { eventsOfNode } from '../../test/daemon/events';
import {
  bcdDataDir as dataDir,
  identityOf,
  joinPinArgs,
  machineEnv,
  NO_NODE,
  wellKnownPins,
  writeInstallConfig,
} from '../../test/daemon/machine';
import { ekRootsDir, tpmWithEk } from '../../test/daemon/tpm';
import { defaultPool, newServerSecret, type ServerDatabase, type ServerProcess } from '../../test/server-process';
import type { Swtpm } from '../../test/swtpm';
import { createEkRoot } from '../../test/tpm-provision';
import { createCaller } from '../api/root';
import { principalOf, type Principal } from '../authz/principal';
import { createPool } from '../pools/pools';

// `bcd join --attestor tpm`, the built single executable, against the production server (test/server-main.ts)
// on a database of its own, each machine a BCD_ROOT prefix with a software TPM of its own (swtpm): no token
// anywhere. The server trusts one test vendor root for EK certificates (BETTER_COMPUTE_TPM_EK_ROOTS).

const secret = newServerSecret();
let database: ServerDatabase;
let server: ServerProcess;
let bcd: BcdBuild;
let started: BcdServer | undefined;
let admin: Principal;
let tenantId: string;
let siteId: string;
let poolId: string;
let pins: Awaited<ReturnType<typeof wellKnownPins>>;
let rootsDir: string | undefined;
const vendor = createEkRoot('CN=Flow Test TPM Vendor,O=Better Compute Tests');
const tpms: Swtpm[] = [];

beforeAll(async () => {
  rootsDir = ekRootsDir(await vendor, 'bc-ek-roots-');
  // A real gateway: a join from --server reads the well-known document there and goes to the gateway it names.
  started = await startBcdServer('tpm_join_flow', secret, { env: { BETTER_COMPUTE_TPM_EK_ROOTS: rootsDir } });
  ({ bcd, database, server } = started);
  const pool = await defaultPool(database.db);
  tenantId = pool.ownerTenantId;
  siteId = pool.siteId;
  poolId = pool.id;
  // Enrollment is off unless a site turns it on: this one does, so unlisted EKs wait in its queue.
  await database.db.site.update({ where: { id: siteId }, data: { tpm: { enrollment: true } } });
  admin = principalOf('local', 'tpm-join-flow-test', [[tenantId, 'admin']]);
  pins = await wellKnownPins(server.url);
}, 300_000);

afterAll(async () => {
  for (const tpm of tpms) await tpm.stop();
  await started?.stop();
  if (rootsDir) rmSync(rootsDir, { recursive: true, force: true });
});

const api = () => createCaller({ db: database.db, principal: admin });
const env = (root: string, tpm: Swtpm, extra: Record<string, string> = {}) => machineEnv(root, NO_NODE, { BCD_TPM: tpm.address, ...extra });
const serverArgs = () => ['--server', server.url, ...joinPinArgs(pins)];

/** A machine with a fresh swtpm; with `vendorRooted`, an ECC EK certificate from the trusted vendor root in its NV. */
async function machine(options: { vendorRooted?: boolean } = {}): Promise<{ root: string; tpm: Swtpm; ekHash: string }> {
  const { tpm, ekHash } = await tpmWithEk(tpms, options.vendorRooted ? await vendor : undefined);
  return { root: newMachineRoot(), tpm, ekHash };
}

/** config.toml as the install writes it, its gateway the API itself (plain http: no pinned TLS in the way). */
const installConfig = (root: string) => writeInstallConfig(root, { gatewayUrl: server.url, siteId, pins });

async function joinedEvent(nodeId: string) {
  return (await eventsOfNode(database.db, nodeId, { tenantId, type: 'node.joined' })).map((e) => e.data as Record<string, unknown>);
}

const WAITING = /waiting for approval: join request (jreq_\S+); give an operator the EK hash ([0-9a-f]{64})/;

describe('bcd join --attestor tpm', () => {
  it(
    'a TPM whose EK chains to a vendor root joins with no token, keeps its key in the TPM, then answers already joined',
    { timeout: 180_000 },
    async () => {
      const m = await machine({ vendorRooted: true });
      const tokensBefore = await database.db.joinToken.count();
      // No config.toml: bcd builds it from the well-known document under the install's pins, as for a token join.
      const result = await run(bcd.binary, ['join', '--attestor', 'tpm', ...serverArgs(), '--site', siteId, '--pool', poolId], {
        env: env(m.root, m.tpm),
      });
      expect(result.code, result.stdout + result.stderr).toBe(0);
      const identity = identityOf(m.root);
      expect(result.stdout).toContain(
        `joined: node ${identity.nodeId} in site ${siteId} (${dataDir(m.root)}); its key is held by the TPM (EK hash ${m.ekHash})\n`,
      );
      // node.key is the TPM's blob of the key, ak.key the AK the leaf names; both 0600; nothing pending is left.
      expect(readFileSync(path.join(dataDir(m.root), 'node.key'), 'utf8')).toMatch(/^bcd-tpm-key v1\npublic [A-Za-z0-9+/=]+\nprivate /);
      expect(readFileSync(path.join(dataDir(m.root), 'ak.key'), 'utf8')).toMatch(/^bcd-tpm-key v1\n/);
      for (const name of ['node.key', 'ak.key', 'identity.json'])
        expect(statSync(path.join(dataDir(m.root), name)).mode & 0o777).toBe(0o600);
      expect(readdirSync(dataDir(m.root)).sort()).toEqual(['ak.key', 'identity.json', 'node.key', 'trust.json']);
      expect(readFileSync(path.join(m.root, 'etc/bcd/config.toml'), 'utf8')).toContain(`site = "${siteId}"`);
      const leaf = readLeafNames(Buffer.from(identity.certificateChain[0]!, 'base64'));
      expect(leaf.uris[1]).toMatch(/^urn:bc:tpm-ak:sha256:[0-9a-f]{64}$/);

      const node = await database.db.node.findUniqueOrThrow({ where: { id: identity.nodeId } });
      expect(node).toMatchObject({ poolId, identityGeneration: 1 });
      expect(await joinedEvent(identity.nodeId)).toEqual([expect.objectContaining({ attestor: 'tpm', nodeKey: 'tpm', reclaim: false })]);
      expect(await database.db.tpmEkBinding.findUnique({ where: { ekSha256: m.ekHash } })).toMatchObject({ nodeId: identity.nodeId });
      expect(await database.db.joinToken.count()).toBe(tokensBefore);

      const again = await run(bcd.binary, ['join', '--attestor', 'tpm'], { env: env(m.root, m.tpm) });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toBe(`already joined: node ${identity.nodeId} (site ${siteId}); to join again: bcd join --reset --yes\n`);
    },
  );

  it(
    'an unlisted EK waits in the queue (--no-wait exits 3 and the next run resumes the same request), is approved and joins; its EK reclaims the node',
    { timeout: 240_000 },
    async () => {
      const m = await machine();
      installConfig(m.root);
      const once = await run(bcd.binary, ['join', '--attestor', 'tpm', '--no-wait'], { env: env(m.root, m.tpm) });
      expect(once.code, once.stdout + once.stderr).toBe(3);
      const [, requestId, printedEkHash] = WAITING.exec(once.stdout)!;
      expect(printedEkHash).toBe(m.ekHash);
      expect(once.stdout).toContain('; run bcd join --attestor tpm again to resume it\n');
      expect(readdirSync(dataDir(m.root))).toEqual(['tpm-join.pending']);

      // The queue shows the EK hash, "no EK certificate" and the AK statement.
      const listed = (await api().joinRequests.list({ tenantId, poolId })).items.find((q) => q.id === requestId)!;
      expect(listed).toMatchObject({ attestor: 'tpm', tpm: { ekHash: m.ekHash, ekIssuer: 'no EK certificate' } });
      expect(listed.tpm!.akStatement).toMatch(/^urn:bc:tpm-ak:sha256:[0-9a-f]{64}$/);

      // Waiting: the same request (the saved CSR), retried every second here instead of the server's 30 s.
      const waiting = startBackground(bcd.binary, ['join', '--attestor', 'tpm'], env(m.root, m.tpm, { BCD_JOIN_RETRY_SECONDS: '1' }));
      try {
        const [, resumed] = await waiting.waitFor(WAITING);
        expect(resumed).toBe(requestId);
        expect(waiting.output()).toContain('; retrying every 1s\n');
        await api().joinRequests.approve({ tenantId, poolId, requestId: requestId! });
        const result = await waiting.done;
        expect(result.code, result.stdout + result.stderr).toBe(0);
        const identity = identityOf(m.root);
        expect(result.stdout).toContain(`joined: node ${identity.nodeId} in site ${siteId}`);
        // The request is printed once, however many retries it took.
        expect(result.stdout.match(/waiting for approval/g)).toHaveLength(1);
        expect(readdirSync(dataDir(m.root)).sort()).toEqual(['ak.key', 'identity.json', 'node.key', 'trust.json']);
        const decided = (await api().joinRequests.list({ tenantId, poolId, state: 'all' })).items.find((q) => q.id === requestId);
        expect(decided).toMatchObject({ state: 'consumed', nodeId: identity.nodeId });
        expect(readLeafNames(Buffer.from(identity.certificateChain[0]!, 'base64')).uris[1]).toBe(listed.tpm!.akStatement);

        // The machine is reinstalled: its EK reclaims the node, generation + 1, the old files kept aside.
        const reclaim = await run(bcd.binary, ['join', '--reset', '--yes', '--attestor', 'tpm'], { env: env(m.root, m.tpm) });
        expect(reclaim.code, reclaim.stdout + reclaim.stderr).toBe(0);
        expect(reclaim.stdout).toContain(`joined: node ${identity.nodeId} in site ${siteId}`);
        expect(identityOf(m.root).nodeId).toBe(identity.nodeId);
        expect((await database.db.node.findUniqueOrThrow({ where: { id: identity.nodeId } })).identityGeneration).toBe(2);
        const files = readdirSync(dataDir(m.root));
        for (const name of ['identity.json', 'node.key', 'ak.key'])
          expect(
            files.filter((f) => f.startsWith(`${name}.reset-`)),
            name,
          ).toHaveLength(1);
        expect(await joinedEvent(identity.nodeId)).toEqual([
          expect.objectContaining({ attestor: 'tpm', reclaim: false }),
          expect.objectContaining({ attestor: 'tpm', reclaim: true, nodeKey: 'tpm' }),
        ]);
        const certs = await database.db.nodeCert.findMany({ where: { nodeId: identity.nodeId }, orderBy: { createdAt: 'asc' } });
        expect(certs.map((c) => [c.identityGeneration, c.revocationReason])).toEqual([
          [1, 'reclaimed'],
          [2, null],
        ]);
      } finally {
        waiting.kill();
      }
    },
  );

  it(
    'better-compute agent join --attestor tpm: --no-wait exits 3, an operator approves while it is stopped, the next run joins with the saved CSR',
    { timeout: 180_000 },
    async () => {
      const m = await machine();
      const identityDir = path.join(m.root, 'agent');
      const cli = () =>
        runCli(
          [
            '--server',
            server.url,
            'agent',
            'join',
            '--attestor',
            'tpm',
            '--site',
            siteId,
            '--no-wait',
            '--identity-dir',
            identityDir,
            '--join-signing-key-pin',
            pins.joinSigningKeyPin,
            '--join-encryption-key-pin',
            pins.joinEncryptionKeyPin,
          ],
          { BCD_TPM: m.tpm.address },
        );
      const first = await cli();
      expect(first.code, first.stdout + first.stderr).toBe(3);
      const [, requestId] = /^Waiting for approval \(join request (jreq_\S+)\); give an operator the EK hash ([0-9a-f]{64})/.exec(
        first.stdout,
      )!;
      expect(first.stdout).toContain(`the EK hash ${m.ekHash}; run the same command again to resume it\n`);
      const saved = JSON.parse(readFileSync(path.join(identityDir, 'tpm-join.pending'), 'utf8')) as { csr: { csrSha256: string } };
      const request = await database.db.joinRequest.findUniqueOrThrow({ where: { id: requestId } });
      expect(request.csrSha256).toBe(saved.csr.csrSha256);
      // No pool named: the operator picks one with the approval.
      await api().joinRequests.approve({ tenantId, poolId, requestId: requestId! });

      // The approval admits only the saved CSR's retry: a run that made a new key would be refused (tpm:request).
      const second = await cli();
      expect(second.code, second.stdout + second.stderr).toBe(0);
      const identity = JSON.parse(readFileSync(path.join(identityDir, 'identity.json'), 'utf8')) as { nodeId: string };
      expect(second.stdout).toBe(`Joined as node ${identity.nodeId} (site ${siteId}, role node); its key is held by the TPM\n`);
      expect(await database.db.node.findUniqueOrThrow({ where: { id: identity.nodeId } })).toMatchObject({ poolId });
      expect(readdirSync(identityDir).sort()).toEqual(['ak.key', 'identity.json', 'node.key', 'trust.json']);

      const again = await cli();
      expect(again.code).not.toBe(0);
      expect(again.stderr).toContain('already holds an identity; join again with --reset --yes');
    },
  );

  it(
    'is refused with the uniform answer in a pool whose joinAttestors leave tpm out; usage errors exit 2',
    { timeout: 120_000 },
    async () => {
      const m = await machine();
      installConfig(m.root);
      const tokenOnly = (await createPool(database.db, admin, { tenantId, siteId, name: 'tokens-only', agent: 'bcd' })).id;
      await database.db.pool.update({ where: { id: tokenOnly }, data: { policy: { joinAttestors: ['join-token'] } } });
      const refused = await run(bcd.binary, ['join', '--attestor', 'tpm', '--pool', tokenOnly], { env: env(m.root, m.tpm) });
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe(`refused: Join refused (ACCESS_DENIED); EK hash ${m.ekHash}\n`);
      expect(refused.stderr).toContain('the reason is in the security.join.refused events');
      expect(readdirSync(dataDir(m.root))).toEqual([]);
      const reasons = (await database.db.event.findMany({ where: { type: 'security.join.refused' } })).map(
        (e) => (e.data as { reason: string }).reason,
      );
      expect(reasons).toContain('tpm:pool');

      const withToken = await run(bcd.binary, ['join', '--attestor', 'tpm', '--token-file', '/dev/null'], { env: env(m.root, m.tpm) });
      expect(withToken.code).toBe(2);
      expect(withToken.stderr).toBe('bcd: a tpm join takes no token: drop --token-file\n');
      const unknown = await run(bcd.binary, ['join', '--attestor', 'x509pop'], { env: env(m.root, m.tpm) });
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toBe('bcd: --attestor is one of join-token, tpm, not x509pop\n');
      const noSite = await run(bcd.binary, ['join', '--attestor', 'tpm', ...serverArgs()], { env: env(newMachineRoot(), m.tpm) });
      expect(noSite.code).toBe(2);
      expect(noSite.stderr).toMatch(/^bcd: a tpm join names its site: --site SITE/);
    },
  );
});
