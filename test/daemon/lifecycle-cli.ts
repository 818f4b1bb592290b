import { rmSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';
import { principalOf, type Principal } from '../../server/authz/principal';
import { insertApiKey } from '../../server/api-keys/api-keys';
import { newMachineRoot, run, startBcdServer, type BcdBuild, type BcdServer } from '../bcd-build';
import { runCli } from '../cli';
import { defaultPool, newServerSecret, type ServerDatabase, type ServerProcess } from '../server-process';
import type { Swtpm } from '../swtpm';
import { createEkRoot } from '../tpm-provision';
import { eventsOfNode } from './events';
import { writeInstallScript } from './install-script';
import { machineEnv, nodeIdOf, wellKnownPins } from './machine';
import { joinTokenMaker } from './tokens';
import { ekRootsDir, tpmWithEk } from './tpm';

/** What a node lifecycle CLI test file runs against, filled in by its beforeAll. */
interface LifecycleDeployment {
  database: ServerDatabase;
  server: ServerProcess;
  bcd: BcdBuild;
  admin: Principal;
  tenantId: string;
  siteId: string;
  poolId: string;
  pins: Awaited<ReturnType<typeof wellKnownPins>>;
}

/**
 * The node lifecycle from the CLI: the production server (test/server-main.ts) and a real gateway on a database
 * `label`, trusting one test vendor root `vendorName` for EK certificates, and an operator API key for the real
 * CLI as a process (bin/better-compute.mjs). Registers the file's beforeAll and afterAll; answers the deployment
 * (its fields set once beforeAll ran) with the calls the tests make on it.
 */
export function useLifecycleDeployment(label: string, vendorName: string) {
  const secret = newServerSecret();
  const vendor = createEkRoot(vendorName);
  const tpms: Swtpm[] = [];
  const scripts = new Map<string, Promise<string>>();
  const d = {} as LifecycleDeployment;
  let started: BcdServer | undefined;
  let rootsDir: string | undefined;
  let apiKeyId: string;
  let cliEnv: Record<string, string>;
  let tokenOf: ReturnType<typeof joinTokenMaker>;

  beforeAll(async () => {
    rootsDir = ekRootsDir(await vendor, 'bc-lifecycle-');
    started = await startBcdServer(label, secret, { env: { BETTER_COMPUTE_TPM_EK_ROOTS: rootsDir } });
    ({ bcd: d.bcd, database: d.database, server: d.server } = started);
    process.env.BETTER_COMPUTE_SECRET = secret; // generateInstallScript reads the PKI like the server does
    const pool = await defaultPool(d.database.db);
    ({ ownerTenantId: d.tenantId, siteId: d.siteId, id: d.poolId } = pool);
    d.admin = principalOf('local', `${label.replace(/_/g, '-')}-test`, [[d.tenantId, 'admin']]);
    const created = await insertApiKey(d.database.db, { tenantId: d.tenantId, role: 'operator', name: 'lifecycle-cli' }, 'test');
    apiKeyId = created.id;
    cliEnv = { BETTER_COMPUTE_URL: d.server.url, BETTER_COMPUTE_API_KEY: created.key };
    d.pins = await wellKnownPins(d.server.url);
    tokenOf = joinTokenMaker(d.database.db, d.admin, { tenantId: d.tenantId, poolId: d.poolId, label: 'lifecycle-cli' });
  }, 300_000);

  afterAll(async () => {
    for (const tpm of tpms) await tpm.stop();
    await started?.stop();
    if (rootsDir) rmSync(rootsDir, { recursive: true, force: true });
  });

  const env = (root: string, extra: Record<string, string> = {}) =>
    machineEnv(root, '/usr/bin:/bin', { BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: '0', ...extra });
  /** The generated install script of `pool`, written once. */
  const scriptOf = (pool: string): Promise<string> => {
    if (!scripts.has(pool))
      scripts.set(
        pool,
        writeInstallScript(d.database.db, d.admin, {
          tenantId: d.tenantId,
          poolId: pool,
          gatewayUrl: started!.gatewayUrl,
          baseUrl: d.server.url,
          bcd: d.bcd,
        }),
      );
    return scripts.get(pool)!;
  };
  /** The node's events of `types` (prefixes), oldest first, as [type, data]. */
  const eventsOf = async (nodeId: string, prefix = 'node.') =>
    (await eventsOfNode(d.database.db, nodeId, { tenantId: d.tenantId, type: { startsWith: prefix } })).map(
      (e) => [e.type, e.data] as const,
    );

  return Object.assign(d, {
    env,
    eventsOf,
    tokenOf: (pool: string) => tokenOf(pool),
    nodesCli: async (verb: string, nodeId: string, ...extra: string[]) => {
      const result = await runCli(['nodes', verb, nodeId, '--tenant', d.tenantId, ...extra], cliEnv);
      return { ...result, json: () => JSON.parse(result.stdout) as Record<string, unknown> };
    },
    /** A new machine the install script joined to `pool` with a token; answers its root and node id. */
    async installedMachine(pool = d.poolId): Promise<{ root: string; nodeId: string }> {
      const root = newMachineRoot();
      const result = await run('sh', [await scriptOf(pool)], { env: env(root), input: `${await tokenOf(pool)}\n` });
      expect(result.code, result.stderr).toBe(0);
      return { root, nodeId: nodeIdOf(root) };
    },
    eventTypes: async (nodeId: string) => (await eventsOf(nodeId)).map(([type]) => type),
    auditOf: async (nodeId: string) =>
      (
        await d.database.db.auditEntry.findMany({ where: { tenantId: d.tenantId, resource: { endsWith: nodeId } }, orderBy: { id: 'asc' } })
      ).map((a) => [a.action, a.actor]),
    actor: () => `api-key:${apiKeyId}`,
    /** A software TPM with a fresh EK whose certificate chains to the vendor root the server trusts. */
    vendorTpm: async () => tpmWithEk(tpms, await vendor),
  });
}
