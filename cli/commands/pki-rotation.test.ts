import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertApiKey } from '../../server/api-keys/api-keys';
import { ensureRootTenant } from '../../server/tenants/tenants';
import { runCliInProcess, startCliApi, type ApiServer } from '../../test/cli';
import { testDb } from '../../test/db';
import { describeKey } from './pki-rotation';

describe('better-compute pki rotate and pki rotation status', { timeout: 120_000 }, () => {
  let api: ApiServer;
  let env: Record<string, string>;
  let rootEnv: Record<string, string>;

  beforeAll(async () => {
    ({ api, env } = await startCliApi(testDb(), { label: 'pki-rot-cli' }));
    const root = await ensureRootTenant(testDb());
    const { key } = await insertApiKey(testDb(), { tenantId: root.id, role: 'admin', name: 'pki-rot-cli-root' }, 'test');
    rootEnv = { ...env, BETTER_COMPUTE_API_KEY: key };
  });
  afterAll(async () => api?.close());

  it('answers a caller who is not a root admin ACCESS_DENIED (exit 4) on status and every step', async () => {
    const status = await runCliInProcess(['pki', 'rotation', 'status'], env);
    expect(status.code, status.stderr).toBe(4);
    expect(status.stderr).toMatch(/ACCESS_DENIED/);
    for (const step of ['--prepare', '--activate', '--retire']) {
      const run = await runCliInProcess(['pki', 'rotate', 'node-ca', step], env);
      expect(run.code, `${step}: ${run.stderr}`).toBe(4);
      expect(run.stderr).toMatch(/ACCESS_DENIED/);
    }
  });

  it('refuses two step flags, none, a bad key and misplaced options before calling the server (exit 2)', async () => {
    const key = path.join(tmpdir(), `pki-rot-${randomBytes(4).toString('hex')}.pem`);
    await writeFile(key, '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n', { mode: 0o600 });
    const before = api.requests.length;
    const cases: [string[], RegExp][] = [
      [['node-ca', '--prepare', '--activate'], /exactly one of --prepare, --activate, --retire \(got --prepare --activate\)/],
      [['node-ca', '--activate', '--retire', '--prepare'], /exactly one of/],
      [['node-ca'], /exactly one of .*\(got none\)/],
      [['root-ca', '--prepare'], /use one of serving-ca, join-signing, join-encryption, node-ca, command-signing/],
      [['node-ca', '--retire', '--force'], /--force needs --reason/],
      [['node-ca', '--retire', '--reason', 'why'], /--reason is recorded only with --force/],
      [['node-ca', '--activate', '--force', '--reason', 'why'], /--force and --reason go with --retire only/],
      [['node-ca', '--activate', '--from', key], /--from and --certificate go with --prepare only/],
      [['node-ca', '--prepare', '--certificate', key], /--certificate goes with --from/],
      [['node-ca', '--prepare', '--from', `${key}.missing`], /--from .*cannot read it \(ENOENT\)/],
    ];
    for (const [args, message] of cases) {
      const run = await runCliInProcess(['pki', 'rotate', ...args], rootEnv);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr, args.join(' ')).toMatch(message);
    }
    expect(api.requests.slice(before)).toEqual([]);
  });

  it('refuses an oversized --from file without sending it', async () => {
    const big = path.join(tmpdir(), `pki-rot-big-${randomBytes(4).toString('hex')}.pem`);
    await writeFile(big, '-----BEGIN PRIVATE KEY-----\n' + 'A'.repeat(20_000));
    const before = api.requests.length;
    const run = await runCliInProcess(['pki', 'rotate', 'node-ca', '--prepare', '--from', big], rootEnv);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/larger than 16384 bytes/);
    expect(api.requests.slice(before)).toEqual([]);
  });

  it('shows a key with its phase, since, pins, the next step and readiness', () => {
    const text = describeKey({
      kind: 'node-ca',
      phase: 'active',
      since: '2026-12-08T10:00:00.000Z',
      currentPin: 'sha256:new',
      otherPin: 'sha256:old',
      nextStep: 'retire',
      readiness: { trustVersion: 9, nodesReady: 48, nodesTotal: 50 },
      liveCertificatesOfPrevious: 3,
      lastRetiredAt: null,
    });
    expect(text).toContain('node-ca (Node CA): active since 2026-12-08T10:00:00.000Z');
    expect(text).toMatch(/in use: +sha256:new/);
    expect(text).toMatch(/previous: +sha256:old/);
    expect(text).toContain('better-compute pki rotate node-ca --retire');
    expect(text).toContain('48 of 50 nodes hold trust version 9 or later');
    expect(text).toMatch(/live certificates of the previous CA: 3 \(retire is refused/);
  });

  it('shows how many gateways still serve the previous serving CA', () => {
    const key = {
      kind: 'serving-ca',
      phase: 'active',
      since: '2026-12-08T10:00:00.000Z',
      currentPin: 'sha256:new',
      otherPin: 'sha256:old',
      nextStep: 'retire',
      readiness: { trustVersion: 9, nodesReady: 50, nodesTotal: 50 },
      lastRetiredAt: null,
    } as const;
    expect(describeKey({ ...key, gatewaysOnPrevious: 2 })).toMatch(
      /gateways still on the previous CA: 2 \(seen in the last minute; retire is refused/,
    );
    expect(describeKey({ ...key, gatewaysOnPrevious: 0 })).toMatch(/gateways still on the previous CA: 0$/m);
  });
});
