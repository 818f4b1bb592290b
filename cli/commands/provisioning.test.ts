import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCliInProcess, startCliApi, type ApiServer } from '../../test/cli';
import { parseCloudConfig, type WrittenFile } from '../../test/cloud-config';
import { testDb } from '../../test/db';
import type { TestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { TOKEN_FILE } from '../../server/provisioning/cloud-config';
import { parseTtlSeconds } from './provisioning';

const db = testDb();
let api: ApiServer;
let env: Record<string, string>;
let t: TestTenant;
let h: JoinHarness;
let dir: string;

beforeAll(async () => {
  ({ api, t, env } = await startCliApi(db, { label: 'prov-cli', role: 'operator', sharedPki: true }));
  h = await createJoinHarness();
  dir = await mkdtemp(path.join(tmpdir(), 'prov-cli-'));
});
afterAll(async () => {
  await api?.close();
});

async function joinedNode() {
  const joined = await agentJoin(h, (await mintToken(t)).token!, machineClaims());
  expect(joined.status).toBe(200);
  return joined.answer!.nodeId;
}

const sha = ['--sha256', `amd64=${'b'.repeat(64)}`];

describe('better-compute provisioning user-data', { timeout: 60_000 }, () => {
  it('reads --ttl as seconds or a duration, bounded like every token', () => {
    expect(parseTtlSeconds('3600')).toBe(3600);
    expect(parseTtlSeconds('15m')).toBe(900);
    for (const bad of ['59', '86401', '0', 'soon']) expect(() => parseTtlSeconds(bad), bad).toThrow();
  });

  it('prints the user data without --output; the join names the node and the server this CLI calls', async () => {
    const nodeId = await joinedNode();
    const run = await runCliInProcess(['provisioning', 'user-data', '--node', nodeId, '--ttl', '900', ...sha], env);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const doc = parseCloudConfig(run.stdout);
    const join = (doc.runcmd as string[][]).find((c) => c[1] === 'join')!;
    expect(join[join.indexOf('--node-id') + 1]).toBe(nodeId);
    expect(join[join.indexOf('--server') + 1]).toBe(new URL(env.BETTER_COMPUTE_URL!).origin);
    expect(join[join.indexOf('--token-file') + 1]).toBe(TOKEN_FILE);
    const token = (doc.write_files as WrittenFile[]).find((f) => f.path === TOKEN_FILE)!;
    expect(token.permissions).toBe('0400');
    expect(join.join(' ')).not.toContain(token.content.trim());
  });

  it('writes --output as a new 0600 file, printing nothing on stdout, and never over an existing file', async () => {
    const nodeId = await joinedNode();
    const file = path.join(dir, 'user-data.yaml');
    const run = await runCliInProcess(
      ['provisioning', 'user-data', '--node', nodeId, '--pool', t.poolId, '--ttl', '1h', '--output', file, ...sha],
      env,
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(file);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const doc = parseCloudConfig(await readFile(file, 'utf8'));
    expect((doc.write_files as WrittenFile[]).find((f) => f.path === TOKEN_FILE)!.content).toMatch(/^bcjt_/);
    const tokens = await db.joinToken.count({ where: { nodeId } });

    const taken = path.join(dir, 'taken.yaml');
    await writeFile(taken, 'keep');
    const refused = await runCliInProcess(['provisioning', 'user-data', '--node', nodeId, '--ttl', '1h', '--output', taken, ...sha], env);
    expect(refused.code).not.toBe(0);
    expect(await readFile(taken, 'utf8')).toBe('keep');
    // Nothing was minted for the refused call.
    expect(await db.joinToken.count({ where: { nodeId } })).toBe(tokens);
  });
});
