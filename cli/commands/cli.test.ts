import { mkdtemp, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_SECRET as SECRET, runCli, runCliInProcess as cli, startCliApi, type ApiServer } from '../../test/cli';
import { testDb } from '../../test/db';
import { createTestTenant, type TestTenant } from '../../test/fixtures';
import { insertApiKey } from '../../server/api-keys/api-keys';

let api: ApiServer;
let t: TestTenant;
let env: Record<string, string>;
let dir: string;

beforeAll(async () => {
  ({ api, t, env } = await startCliApi(testDb(), { sharedPki: true }));
  dir = await mkdtemp(path.join(tmpdir(), 'bc-cli-'));
});
afterAll(async () => api?.close());

// The CLI runs in this process (cli/program.ts, as bin/better-compute.mjs runs it) except where the process is
// the point: the first admin key's exit codes and output through a pipe, and commander's usage error, are
// spawned (about a second each to load).
describe('better-compute', { timeout: 120_000 }, () => {
  it('creates the first admin key directly on the database, 0600, never over a file', async () => {
    const out = path.join(dir, 'admin.key');
    const created = await runCli(['api-keys', 'create', '--tenant', 'root', '--role', 'admin', '--local', '--out', out]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/Created API key ak_\w+ \(admin\); written to/);
    const key = (await readFile(out, 'utf8')).trim();
    expect(key).toMatch(/^bcak_ak_[0-9a-z]{26}\.[A-Za-z0-9_-]{43}$/);
    expect(created.stdout + created.stderr).not.toContain(key);
    expect((await stat(out)).mode & 0o777).toBe(0o600);
    const again = await runCli(['api-keys', 'create', '--tenant', 'root', '--role', 'admin', '--local', '--out', out]);
    expect(again.code).toBe(7);
    expect(again.stderr).toContain('already exists');
    expect((await readFile(out, 'utf8')).trim()).toBe(key);
    // The key works against the API: root admins list every tenant.
    const tenants = await cli(['tenants', 'list', '--json'], { ...env, BETTER_COMPUTE_API_KEY: key });
    expect(tenants.code, tenants.stderr).toBe(0);
    expect(JSON.parse(tenants.stdout).map((x: { name: string }) => x.name)).toEqual(expect.arrayContaining(['root', t.name]));
  });

  it('manages sites and pools with JSON and tables, and clear errors with their exit codes', async () => {
    const site = await cli(['sites', 'create', '--tenant', t.name, '--name', 'dc2', '--json'], env);
    expect(site.code, site.stderr).toBe(0);
    const siteId = JSON.parse(site.stdout).id;
    const pool = await cli(
      ['pools', 'create', '--tenant', t.tenantId, '--site', siteId, '--name', 'gpu', '--join-attestors', 'join-token,tpm', '--json'],
      env,
    );
    expect(pool.code, pool.stderr).toBe(0);
    const poolRecord = JSON.parse(pool.stdout);
    expect(poolRecord).toMatchObject({ name: 'gpu', agent: 'bcd', policy: { joinAttestors: ['join-token', 'tpm'] } });
    const table = await cli(['pools', 'list', '--tenant', t.tenantId], env);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+SITE\s+AGENT\s+ARCHIVED$/);
    expect(table.stdout).toContain(poolRecord.id);

    const duplicate = await cli(['sites', 'create', '--tenant', t.tenantId, '--name', 'dc2'], env);
    expect([duplicate.code, duplicate.stderr.trim()]).toEqual([
      7,
      'error (ALREADY_EXISTS): A site named dc2 already exists in this tenant',
    ]);
    const badName = await cli(['pools', 'create', '--tenant', t.tenantId, '--site', siteId, '--name', 'Bad Name'], env);
    expect(badName.code).toBe(2);
    expect(badName.stderr).toContain('name:');
    const other = await createTestTenant(testDb());
    const cross = await cli(['pools', 'get', other.pool.id, '--tenant', t.tenantId], env);
    expect([cross.code, cross.stderr.trim()]).toEqual([3, `error (NOT_FOUND): Pool ${other.pool.id} not found`]);
    const busy = await cli(['sites', 'archive', siteId, '--tenant', t.tenantId], env);
    expect(busy.code).toBe(5);
    expect(busy.stderr).toContain('still has 1 live pool');
    const archived = await cli(['pools', 'archive', poolRecord.id, '--tenant', t.tenantId, '--json'], env);
    expect(JSON.parse(archived.stdout).archivedAt).not.toBeNull();
    const siteArchived = await cli(['sites', 'archive', siteId, '--tenant', t.tenantId, '--json'], env);
    expect(JSON.parse(siteArchived.stdout)).toMatchObject({ id: siteId, name: 'dc2', archivedAt: expect.any(String) });
    const shown = await cli(['sites', 'get', siteId, '--tenant', t.tenantId], env);
    // TPM enrollment is off unless the site turns it on, and the table says so.
    expect(shown.stdout.split('\n')[0]).toMatch(/^ID\s+NAME\s+KIND\s+APPROVALS\s+TPM ENROLLMENT\s+CREATED\s+ARCHIVED$/);
    expect(shown.stdout.split('\n')[1]).toMatch(new RegExp(`^${siteId}\\s+dc2\\s+\\S+\\s+1\\s+off\\s`));
  });

  it('refuses a viewer, a bad key and an unreachable server with distinct exit codes', async () => {
    const { key: viewerKey } = await insertApiKey(testDb(), { tenantId: t.tenantId, role: 'viewer', name: 'ro' }, 'test');
    const denied = await cli(['pools', 'archive', t.pool.id, '--tenant', t.tenantId], { ...env, BETTER_COMPUTE_API_KEY: viewerKey });
    expect(denied.code).toBe(4);
    expect(denied.stderr).toContain('ACCESS_DENIED');
    const badKey = await cli(['pools', 'list', '--tenant', t.tenantId], { ...env, BETTER_COMPUTE_API_KEY: 'bcak_nope' });
    expect(badKey.code).toBe(4);
    expect(badKey.stderr).toContain('UNAUTHENTICATED');
    const down = await cli(['pools', 'list', '--tenant', t.tenantId], { ...env, BETTER_COMPUTE_URL: 'http://127.0.0.1:9' });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/^error: Cannot reach http:\/\/127\.0\.0\.1:9\/api\/compute/);
    const usage = await runCli(['pools', 'create'], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain("error: required option '--site <siteId>' not specified");
    expect(await cli(['pools', 'create'], env)).toEqual(usage);
    const pxe = ['dev', '--sim', '1', '--pxe', '--tenant', t.tenantId, '--site', t.site.id];
    const interval = await cli([...pxe, '--retry-interval', '0'], env);
    expect([interval.code, interval.stderr.split('\n')[0]]).toEqual([
      2,
      "error: option '--retry-interval <seconds>' argument '0' is invalid. use a whole number from 1 to 3,600",
    ]);
    const fromEnv = await cli(pxe, { ...env, BETTER_COMPUTE_SIM_RETRY_SECONDS: '30s' });
    expect([fromEnv.code, fromEnv.stderr]).toEqual([
      2,
      'error (INVALID_ARGUMENT): BETTER_COMPUTE_SIM_RETRY_SECONDS: use a whole number from 1 to 3,600\n',
    ]);
  });

  it('joins simulated machines with dev --sim and reads the events they wrote', async () => {
    const sim = await cli(['dev', '--sim', '5', '--tenant', t.tenantId, '--pool', t.pool.id, '--concurrency', '3', '--json'], env);
    expect(sim.code, sim.stderr).toBe(0);
    const summary = JSON.parse(sim.stdout);
    expect(summary).toMatchObject({ admitted: 5, refused: 0, failed: 0 });
    expect(summary.p99Ms).toBeGreaterThanOrEqual(summary.p50Ms);
    expect(sim.stderr).toMatch(/joining: 5\/5/);
    expect(await testDb().node.count({ where: { poolId: t.pool.id } })).toBe(5);

    const events = await cli(['events', 'list', '--tenant', t.tenantId, '--type', 'node.joined', '--json'], env);
    expect(events.code, events.stderr).toBe(0);
    const items = JSON.parse(events.stdout);
    expect(items).toHaveLength(5);
    expect(items[0]).toMatchObject({ type: 'node.joined', data: { attestor: 'join-token', nodeKey: 'unattested' } });

    // `nodes get` prints the node, then its certificate history: the one the join issued, current.
    const { nodeId, certificateSerial } = items[0].data;
    const shown = await cli(['nodes', 'get', nodeId, '--tenant', t.tenantId], env);
    expect(shown.code, shown.stderr).toBe(0);
    const history = shown.stdout.split('\n\nCertificates:\n')[1]!.trim().split('\n');
    expect(history[0]).toMatch(/^SERIAL\s+GENERATION\s+ISSUED BY\s+NOT BEFORE\s+NOT AFTER\s+STATUS$/);
    expect(history.slice(1)).toHaveLength(1);
    expect(history[1]).toMatch(new RegExp(`^${certificateSerial}\\s+1\\s+join\\s+\\S+\\s+\\S+\\s+current$`));
    const json = JSON.parse((await cli(['nodes', 'get', nodeId, '--tenant', t.tenantId, '--json'], env)).stdout);
    expect(json.certificates).toEqual([
      expect.objectContaining({ serial: certificateSerial, issuedBy: 'join', isCurrent: true, revokedAt: null }),
    ]);
  });
});

describe('the agent against a served well-known document', { timeout: 120_000 }, () => {
  it('publishes the join and gateway sections, and an agent pinned to them joins and writes its identity', async () => {
    const { loadPki } = await import('../../server/pki/bundle/store');
    const { installPins } = await import('../../server/pki/pins-summary');
    const { joinWithToken } = await import('../../agent/join');
    const { createJoinToken } = await import('../../server/tokens/join-tokens');
    const pins = installPins(await loadPki(testDb(), SECRET));
    process.env.BETTER_COMPUTE_GATEWAY_URL = 'https://gw.eu.example.com';
    try {
      const doc = await (await fetch(`${api.url}/api/compute/.well-known/better-compute`)).json();
      expect(Object.keys(doc).sort()).toEqual(['basePath', 'gateway', 'join', 'name', 'protocol', 'version']);
      expect(doc.join.encryptionKeyPin).toBe(pins.joinEncryptionKeyPin);
      expect(doc.join.signingKeyPin).toBe(pins.joinSigningKeyPin);
      expect(doc.join.encryptionJwk).toEqual({ kty: 'EC', crv: 'P-256', x: expect.any(String), y: expect.any(String) });
      expect(doc.gateway).toEqual({ url: 'https://gw.eu.example.com', serverName: 'gw.eu.example.com', servingCaPin: pins.servingCaPin });
    } finally {
      delete process.env.BETTER_COMPUTE_GATEWAY_URL;
    }

    const { token } = await createJoinToken(testDb(), t.admin, {
      tenantId: t.tenantId,
      poolId: t.pool.id,
      ttlSeconds: 600,
      idempotencyKey: `agent-${Date.now()}`,
      maxUses: 1,
      allowReclaim: false,
    });
    const identityDir = await mkdtemp(path.join(tmpdir(), 'bc-identity-'));
    const answer = await joinWithToken({
      serverUrl: api.url,
      token: token!,
      claims: { productUuid: '4c4c4544-0031-3510-8052-b4c04f4e5632', productSerial: `SN-${Date.now()}`, macs: ['3c:ec:ef:12:34:56'] },
      pins: { joinSigningKeyPin: pins.joinSigningKeyPin, joinEncryptionKeyPin: pins.joinEncryptionKeyPin },
      identityDir,
    });
    expect(answer.status).toBe('joined');
    expect((await stat(path.join(identityDir, 'node.key'))).mode & 0o777).toBe(0o600);
    const identity = JSON.parse(await readFile(path.join(identityDir, 'identity.json'), 'utf8'));
    expect(identity).toMatchObject({ nodeId: (answer as { nodeId: string }).nodeId, siteId: t.site.id, role: 'node' });

    // A machine that already has an identity does nothing, and spends no token.
    const { token: second, id: secondId } = await createJoinToken(testDb(), t.admin, {
      tenantId: t.tenantId,
      poolId: t.pool.id,
      ttlSeconds: 600,
      idempotencyKey: `agent2-${Date.now()}`,
      maxUses: 1,
      allowReclaim: false,
    });
    await expect(
      joinWithToken({
        serverUrl: api.url,
        token: second!,
        claims: {},
        pins: { joinSigningKeyPin: pins.joinSigningKeyPin, joinEncryptionKeyPin: pins.joinEncryptionKeyPin },
        identityDir,
      }),
    ).rejects.toThrow(/^already joined/);
    expect((await testDb().joinToken.findUniqueOrThrow({ where: { id: secondId } })).usesLeft).toBe(1);

    // A wrong pin is refused before anything is sent.
    const elsewhere = await mkdtemp(path.join(tmpdir(), 'bc-identity-'));
    await expect(
      joinWithToken({
        serverUrl: api.url,
        token: second!,
        claims: {},
        pins: { joinSigningKeyPin: pins.joinSigningKeyPin, joinEncryptionKeyPin: pins.servingCaPin },
        identityDir: elsewhere,
      }),
    ).rejects.toThrow(/join_encryption_key_pin/);
  });
});

// Every pki command opens or seals the bundle with scrypt N=2^17 in a CLI process of its own: slow on a busy machine.
describe('pki commands', { timeout: 120_000 }, () => {
  it('init refuses to replace a PKI, names a bad trust domain, and a wrong secret changes nothing', async () => {
    const again = await cli(['pki', 'init', '--trust-domain', 'other.example.com'], { BETTER_COMPUTE_SECRET: SECRET });
    expect(again.code).toBe(7);
    expect(again.stderr).toContain('A PKI bundle already exists');

    const { createFreshDatabase } = await import('../../test/db');
    const fresh = await createFreshDatabase(`cli_pki_${Date.now()}`);
    const bad = await cli(['pki', 'init', '--trust-domain', 'Not_A_Domain'], { DATABASE_URL: fresh, BETTER_COMPUTE_SECRET: SECRET });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^error \(INVALID_ARGUMENT\): trustDomain: /);
    const short = await cli(['pki', 'init', '--trust-domain', 'ok.example.com'], { DATABASE_URL: fresh, BETTER_COMPUTE_SECRET: 'short' });
    expect(short.code).toBe(2);
    const created = await cli(['pki', 'init', '--trust-domain', 'ok.example.com', '--json'], {
      DATABASE_URL: fresh,
      BETTER_COMPUTE_SECRET: SECRET,
    });
    expect(created.code, created.stderr).toBe(0);
    const pins = JSON.parse(created.stdout);
    expect(pins).toMatchObject({ trustDomain: 'ok.example.com', joinSigningKeyPin: expect.stringMatching(/^sha256\//) });
    expect(created.stdout + created.stderr).not.toContain(SECRET);

    const wrong = await cli(['pki', 'show'], { DATABASE_URL: fresh, BETTER_COMPUTE_SECRET: 'a-wrong-secret-0123456789' });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr.trim()).toBe('error (INVALID_ARGUMENT): BETTER_COMPUTE_SECRET does not open the PKI bundle (wrong secret?)');
    const shown = await cli(['pki', 'show', '--json'], { DATABASE_URL: fresh, BETTER_COMPUTE_SECRET: SECRET });
    expect(JSON.parse(shown.stdout)).toEqual(pins);
  });

  it('issues a gateway certificate that verifies against the serving CA, never over a file', async () => {
    const { loadPki } = await import('../../server/pki/bundle/store');
    const { execFileSync } = await import('node:child_process');
    const { writeFile } = await import('node:fs/promises');
    const bundle = await loadPki(testDb(), SECRET);
    const cert = path.join(dir, 'gateway.crt');
    const key = path.join(dir, 'gateway.key');
    const issued = await cli(['pki', 'issue-gateway', '--san', 'gw.eu.example.com', '--cert', cert, '--key', key], {
      BETTER_COMPUTE_SECRET: SECRET,
    });
    expect(issued.code, issued.stderr).toBe(0);
    expect((await stat(key)).mode & 0o777).toBe(0o600);
    const ca = path.join(dir, 'serving-ca.pem');
    await writeFile(ca, bundle.servingCa.certificatePem);
    expect(execFileSync('openssl', ['verify', '-purpose', 'sslserver', '-CAfile', ca, cert]).toString().trim()).toBe(`${cert}: OK`);
    expect(execFileSync('openssl', ['x509', '-in', cert, '-noout', '-ext', 'subjectAltName']).toString()).toContain(
      'DNS:gw.eu.example.com',
    );
    const twice = await cli(['pki', 'issue-gateway', '--san', 'gw.eu.example.com', '--cert', cert, '--key', path.join(dir, 'other.key')], {
      BETTER_COMPUTE_SECRET: SECRET,
    });
    expect(twice.code).toBe(7);
    const badSan = await cli(
      ['pki', 'issue-gateway', '--san', 'bad host!', '--cert', path.join(dir, 'x.crt'), '--key', path.join(dir, 'x.key')],
      { BETTER_COMPUTE_SECRET: SECRET },
    );
    expect(badSan.code).toBe(2);
  });
});

describe('operators reset-password', { timeout: 120_000 }, () => {
  it('prints a new one-time password that signs in, and refuses an unknown operator', async () => {
    const { createOperator, authenticateOperator } = await import('../../server/operators/operators');
    const email = `reset-${Date.now()}@example.com`;
    await createOperator(testDb(), { email, name: 'Reset me', password: 'the-old-password-123', tenantId: t.tenantId, role: 'viewer' });
    const reset = await cli(['operators', 'reset-password', '--email', email.toUpperCase(), '--local']);
    expect(reset.code, reset.stderr).toBe(0);
    const password = /one-time password for [^:]+: (\S+)/.exec(reset.stdout)![1]!;
    expect(await authenticateOperator(testDb(), email, password)).toMatchObject({ email });
    expect(await authenticateOperator(testDb(), email, 'the-old-password-123')).toBeNull();
    const unknown = await cli(['operators', 'reset-password', '--email', 'nobody@example.com', '--local']);
    expect([unknown.code, unknown.stderr.trim()]).toEqual([3, 'error (NOT_FOUND): Operator nobody@example.com not found']);
  });
});
