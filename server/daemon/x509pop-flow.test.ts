import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { X509Certificate } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newMachineRoot as newRoot, run, startBcdServer, type BcdBuild, type BcdServer } from '../../test/bcd-build';
import { defaultPool, newServerSecret, type ServerDatabase, type ServerProcess } from '../../test/server-process';
import { principalOf, type Principal } from '../authz/principal';
import { createPool } from '../pools/pools';
import { createJoinToken } from '../tokens/join-tokens';
import { generateInstallScript } from './generate';

// An x509pop re-join by the built bcd, by itself: a machine installed with the generated script whose
// certificate expired while it was offline runs `bcd node --once`, which re-joins with its last key through
// the real gateway (the production server on the test database behind it) and renews on the new identity.
// Certificates last 60 s here (BETTER_COMPUTE_CERT_TTL_SECONDS), so the test waits for a real expiry.

const secret = newServerSecret();
const NO_NODE = '/nonexistent';
let database: ServerDatabase;
let server: ServerProcess;
let bcd: BcdBuild;
let started: BcdServer | undefined;
let admin: Principal;
let tenantId: string;
let poolId: string;
let script: string;
const dataDir = mkdtempSync(path.join(tmpdir(), 'bc-x509pop-'));

const env = (root: string, PATH = '/usr/bin:/bin') => ({ PATH, BCD_ROOT: root }) as unknown as NodeJS.ProcessEnv;
const bcdOf = (root: string) => path.join(root, 'usr/local/bin/bcd');
const identityOf = (root: string) =>
  JSON.parse(readFileSync(path.join(root, 'var/lib/bcd/identity.json'), 'utf8')) as { nodeId: string; certificateChain: string[] };

beforeAll(async () => {
  started = await startBcdServer('x509pop_flow', secret, { env: { BETTER_COMPUTE_CERT_TTL_SECONDS: '60' } });
  ({ bcd, database, server } = started);
  const { gatewayUrl } = started;
  process.env.BETTER_COMPUTE_SECRET = secret;
  const pool = await defaultPool(database.db);
  tenantId = pool.ownerTenantId;
  admin = principalOf('local', 'x509pop-flow-test', [[tenantId, 'admin']]);
  poolId = (await createPool(database.db, admin, { tenantId, siteId: pool.siteId, name: 'rejoinable', agent: 'bcd' })).id;
  await database.db.pool.update({ where: { id: poolId }, data: { policy: { joinAttestors: ['join-token', 'x509pop'] } } });
  const generated = await generateInstallScript(
    database.db,
    admin,
    { tenantId, poolId, gatewayUrl, baseUrl: server.url, bcdVersion: bcd.version, sha256: { amd64: bcd.sha256 } },
    bcd.dir,
  );
  script = path.join(dataDir, 'install-bcd.sh');
  writeFileSync(script, generated.script);
}, 300_000);

afterAll(async () => {
  await started?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('bcd node with a certificate that expired while the machine was offline', () => {
  it('re-joins with x509pop by itself, keeps its node, and renews on the new identity', { timeout: 240_000 }, async () => {
    const root = newRoot();
    const token = (
      await createJoinToken(database.db, admin, {
        tenantId,
        poolId,
        ttlSeconds: 3600,
        idempotencyKey: 'x509pop-flow-1',
        maxUses: 1,
        allowReclaim: false,
      })
    ).token!;
    const installed = await run('sh', [script], { env: env(root), input: `${token}\n` });
    expect(installed.code, installed.stderr).toBe(0);
    const before = identityOf(root);
    const notAfter = new Date(new X509Certificate(Buffer.from(before.certificateChain[0]!, 'base64')).validTo).getTime();
    // Offline until the certificate has expired.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, notAfter - Date.now()) + 2_000));

    const result = await run(bcdOf(root), ['node', '--once'], { env: env(root, NO_NODE) });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stdout).toContain(`re-joined with x509pop as node ${before.nodeId}`);
    expect(result.stdout).toContain('renewed spiffe://');
    const after = identityOf(root);
    expect(after.nodeId).toBe(before.nodeId);
    const node = await database.db.node.findUniqueOrThrow({ where: { id: before.nodeId } });
    expect(node.identityGeneration).toBe(2);
    const certs = await database.db.nodeCert.findMany({ where: { nodeId: before.nodeId }, orderBy: { createdAt: 'asc' } });
    // The token join's, the x509pop re-join's, and the renewal's.
    expect(certs.map((c) => [c.identityGeneration, c.revocationReason])).toEqual([
      [1, 'reclaimed'],
      [2, null],
      [2, null],
    ]);
    const joined = await database.db.event.findMany({ where: { tenantId, type: 'node.joined' }, orderBy: { id: 'asc' } });
    expect(joined.map((e) => (e.data as { attestor: string }).attestor)).toEqual(['join-token', 'x509pop']);
  });
});
