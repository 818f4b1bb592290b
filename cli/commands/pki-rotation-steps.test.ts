import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertApiKey } from '../../server/api-keys/api-keys';
import { createDb, type Db } from '../../server/db/client';
import { initPki } from '../../server/pki/bundle/store';
import { ensureRootTenant } from '../../server/tenants/tenants';
import { runCliInProcess, startCliApi, type ApiServer } from '../../test/cli';
import { createMigratedDatabase, dropDatabase } from '../../test/db';

// A rotation changes the deployment's one PKI bundle: a database of this file's own, so no other file's joins see it.
const name = `cli_pki_rotation_${randomBytes(4).toString('hex')}`;
const secret = `pki-rotation-cli-${randomBytes(24).toString('base64url')}`;
let db: Db;
let api: ApiServer;
let rootEnv: Record<string, string>;
const saved = process.env.BETTER_COMPUTE_SECRET;

beforeAll(async () => {
  db = createDb(await createMigratedDatabase(name), { max: 4 });
  await initPki(db, { trustDomain: 'rotation.example.com', secret });
  process.env.BETTER_COMPUTE_SECRET = secret;
  const root = await ensureRootTenant(db);
  let env: Record<string, string>;
  ({ api, env } = await startCliApi(db, { label: 'pki-steps' }));
  const { key } = await insertApiKey(db, { tenantId: root.id, role: 'admin', name: 'root' }, 'test');
  rootEnv = { ...env, BETTER_COMPUTE_API_KEY: key };
}, 180_000);
afterAll(async () => {
  await api?.close();
  await db?.$disconnect();
  await dropDatabase(name);
  process.env.BETTER_COMPUTE_SECRET = saved;
});

describe('better-compute pki rotate, end to end', { timeout: 180_000 }, () => {
  it('takes the command-signing key through prepare, activate and retire, and status follows', async () => {
    const cli = (...args: string[]) => runCliInProcess(args, rootEnv);
    const status = async () =>
      JSON.parse((await cli('pki', 'rotation', 'status', '--json')).stdout) as {
        trustVersion: number;
        keys: { kind: string; phase: string; nextStep: string; currentPin: string; otherPin: string | null }[];
      };
    const commandKey = async () => (await status()).keys.find((k) => k.kind === 'command-signing')!;
    const start = await status();
    expect(start.keys.map((k) => k.kind)).toEqual(['serving-ca', 'join-signing', 'join-encryption', 'node-ca', 'command-signing']);
    const before = await commandKey();
    expect(before).toMatchObject({ phase: 'idle', nextStep: 'prepare', otherPin: null });

    const early = await cli('pki', 'rotate', 'command-signing', '--activate');
    expect(early.code, early.stderr).toBe(5);
    expect(early.stderr).toMatch(/INVALID_STATE/);

    const prepared = await cli('pki', 'rotate', 'command-signing', '--prepare');
    expect(prepared.code, prepared.stderr).toBe(0);
    expect(prepared.stdout).toMatch(/^Prepared Command-signing key; trust version \d+\./);
    expect(prepared.stdout).toContain('better-compute pki rotate command-signing --activate');
    expect(prepared.stdout).toMatch(/readiness: +\d+ of \d+ nodes hold trust version \d+/);
    const next = await commandKey();
    expect(next).toMatchObject({ phase: 'prepared', nextStep: 'activate', currentPin: before.currentPin });
    expect(next.otherPin).toMatch(/\S/);

    const activated = await cli('pki', 'rotate', 'command-signing', '--activate', '--json');
    expect(activated.code, activated.stderr).toBe(0);
    expect(JSON.parse(activated.stdout)).toMatchObject({ kind: 'command-signing', phase: 'active' });
    expect(await commandKey()).toMatchObject({
      phase: 'active',
      nextStep: 'retire',
      currentPin: next.otherPin,
      otherPin: before.currentPin,
    });

    const retired = await cli('pki', 'rotate', 'command-signing', '--retire');
    expect(retired.code, retired.stderr).toBe(0);
    const after = await status();
    expect(after.trustVersion).toBe(start.trustVersion + 3);
    expect(after.keys.find((k) => k.kind === 'command-signing')).toMatchObject({
      phase: 'idle',
      currentPin: next.otherPin,
      otherPin: null,
    });

    const human = await cli('pki', 'rotation', 'status');
    expect(human.stdout).toContain(`Trust version ${after.trustVersion}`);
    expect(human.stdout).toMatch(/command-signing \(Command-signing key\): idle since /);
    expect(human.stdout).not.toContain(secret);
  });

  it('retires the node CA with --force --reason; the active node CA shows its live certificates', async () => {
    const cli = (...args: string[]) => runCliInProcess(args, rootEnv);
    expect((await cli('pki', 'rotate', 'node-ca', '--prepare')).code).toBe(0);
    const activated = await cli('pki', 'rotate', 'node-ca', '--activate');
    expect(activated.code, activated.stderr).toBe(0);
    expect(activated.stdout).toMatch(/live certificates of the previous CA: 0/);
    const forced = await cli('pki', 'rotate', 'node-ca', '--retire', '--force', '--reason', 'rotation drill');
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.stdout).toMatch(/^Retired the previous Node CA; trust version \d+\./);
    expect(forced.stdout).toMatch(/node-ca \(Node CA\): idle since /);
  });
});
