import { createHash, generateKeyPairSync } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { pinnedFetch } from '../../agent/bcd/pinned-fetch';
import { newMachineRoot as newRoot, run } from '../../test/bcd-build';
import { useBcdDeployment } from '../../test/daemon/deployment';
import { env, mode, runScript, scriptFile } from '../../test/daemon/install-flow';
import { installedBcd, joinPinArgs, nodeIdOf } from '../../test/daemon/machine';
import { tokenIdOf, usesLeftOf } from '../../test/daemon/tokens';

// bcd join on its own, end to end against the production server (test/server-main.ts, serving the real built
// bcd) and a real gateway: the documented way back on a host the generated script installed under a BCD_ROOT
// prefix, and the bootstrap from the well-known document with the install's pins.

const d = useBcdDeployment('bcd_join_flow', { allowReclaim: true, pins: true });
let goodScript: string;

beforeAll(async () => {
  goodScript = await scriptFile(d, { amd64: d.bcd.sha256 });
});

describe('the documented way back: bcd join --config /etc/bcd/config.toml --reset --yes < token', () => {
  it(
    'joins again through the gateway alone on a host the script installed, moving every identity file aside',
    { timeout: 240_000 },
    async () => {
      const root = newRoot();
      const bcdDir = path.join(root, 'var/lib/bcd');
      const installedRun = await runScript(goodScript, root, { token: await d.newToken() });
      expect(installedRun.code, installedRun.stderr).toBe(0);
      const first = nodeIdOf(root);
      // A renewal through the gateway, as bcd.service makes them: the replaced pair stays as *.previous.
      const renewed = await run(installedBcd(root), ['node', '--once'], { env: env(root, '/nonexistent') });
      expect(renewed.code, renewed.stdout + renewed.stderr).toBe(0);
      // trust.json: the trust set the join answer carried (kept across --reset, never moved aside).
      expect(readdirSync(bcdDir).sort()).toEqual([
        'identity.json',
        'identity.json.previous',
        'node.key',
        'node.key.previous',
        'trust.json',
      ]);
      const before = Object.fromEntries(
        readdirSync(bcdDir)
          .filter((name) => name !== 'trust.json')
          .map((name) => [name, readFileSync(path.join(bcdDir, name), 'utf8')]),
      );

      // The gateway serves the well-known document the join reads, the same bytes as the API's.
      const viaGateway = await pinnedFetch({ servingCaPin: d.pins.servingCaPin })(`${d.gatewayUrl}/api/compute/.well-known/better-compute`);
      expect(viaGateway.status).toBe(200);
      expect(await viaGateway.json()).toEqual(await (await fetch(`${d.server.url}/api/compute/.well-known/better-compute`)).json());

      // Exactly the documented command: the installed config, no --server, the token on standard input.
      const token = await d.newToken();
      const again = await run(installedBcd(root), ['join', '--config', path.join(root, 'etc/bcd/config.toml'), '--reset', '--yes'], {
        env: env(root, '/nonexistent'),
        input: `${token}\n`,
      });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/^joined: node /);
      // The same machine (its hardware key), so the token's allowReclaim gives it back its node.
      expect(nodeIdOf(root)).toBe(first);
      expect(await usesLeftOf(d.database.db, token)).toBe(0);
      const names = readdirSync(bcdDir).sort();
      const stamp = names.find((name) => name.startsWith('identity.json.reset-'))!.slice('identity.json.reset-'.length);
      expect(stamp).toMatch(/^\d{8}T\d{6}Z$/);
      expect(names).toEqual([
        'identity.json',
        `identity.json.previous.reset-${stamp}`,
        `identity.json.reset-${stamp}`,
        'node.key',
        `node.key.previous.reset-${stamp}`,
        `node.key.reset-${stamp}`,
        'trust.json',
      ]);
      for (const [name, text] of Object.entries(before))
        expect(readFileSync(path.join(bcdDir, `${name}.reset-${stamp}`), 'utf8')).toBe(text);
      // The new identity works: it renews through the gateway.
      const next = await run(installedBcd(root), ['node', '--once'], { env: env(root, '/nonexistent') });
      expect(next.code, next.stdout + next.stderr).toBe(0);
    },
  );
});

describe('bcd join from the well-known document', () => {
  const join = (root: string, args: string[], input = '') => run(d.bcd.binary, ['join', ...args], { env: env(root), input });
  const pinArgs = () => joinPinArgs(d.pins);
  async function tokenFile(root: string, fileMode = 0o600) {
    const file = path.join(root, 'token');
    writeFileSync(file, `${await d.newToken()}\n`, { mode: fileMode });
    return file;
  }
  const tokenId = (file: string) => tokenIdOf(readFileSync(file, 'utf8').trim());

  it(
    'with a join-encryption.jwk that does not match the pin, fails clearly, with or without --server, and spends nothing',
    { timeout: 120_000 },
    async () => {
      const root = newRoot();
      const installedRun = await runScript(goodScript, root, { token: await d.newToken() });
      expect(installedRun.code, installedRun.stderr).toBe(0);
      const identityBefore = readFileSync(path.join(root, 'var/lib/bcd/identity.json'), 'utf8');
      const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      writeFileSync(path.join(root, 'etc/bcd/join-encryption.jwk'), JSON.stringify(publicKey.export({ format: 'jwk' })));
      const token = await d.newToken();
      for (const extra of [[], ['--server', d.server.url]]) {
        const result = await join(root, ['--config', path.join(root, 'etc/bcd/config.toml'), '--reset', '--yes', ...extra], token);
        expect(result.code).toBe(1);
        expect(result.stderr).toMatch(
          /join-encryption\.jwk does not match join_encryption_key_pin; after a join key rotation, generate the install script again and rerun it/,
        );
        expect(result.stderr).not.toContain(token);
      }
      expect(readFileSync(path.join(root, 'var/lib/bcd/identity.json'), 'utf8')).toBe(identityBefore);
      expect(readdirSync(path.join(root, 'var/lib/bcd')).filter((name) => name.includes('.reset-'))).toEqual([]);
      expect(await usesLeftOf(d.database.db, token)).toBe(1);
    },
  );

  it(
    'with no config.toml, joins with the three pins and then writes config.toml and join-encryption.jwk',
    { timeout: 120_000 },
    async () => {
      const root = newRoot();
      const file = await tokenFile(root);
      const result = await join(root, ['--server', d.server.url, ...pinArgs(), '--token-file', file]);
      expect(result.code, result.stderr).toBe(0);
      expect(existsSync(file)).toBe(false);
      const config = readFileSync(path.join(root, 'etc/bcd/config.toml'), 'utf8');
      expect(config).toContain(`gateway_url = "${d.gatewayUrl}"`);
      expect(config).toContain(`site = "${d.pool.siteId}"`);
      expect(config).toContain(`serving_ca_spki_pin = "${d.pins.servingCaPin}"`);
      expect(mode(path.join(root, 'etc/bcd/config.toml'))).toBe('600');
      expect(mode(path.join(root, 'etc/bcd/join-encryption.jwk'))).toBe('644');
      const doctor = await run(d.bcd.binary, ['doctor'], { env: env(root, '/nonexistent') });
      expect(doctor.code, doctor.stdout).toBe(0);
    },
  );

  it('refuses a document whose pins differ from the install, before the token is spent', async () => {
    const root = newRoot();
    const file = await tokenFile(root);
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const otherPin = `sha256/${createHash('sha256')
      .update(publicKey.export({ type: 'spki', format: 'der' }))
      .digest('base64')}`;
    const args = [
      '--server',
      d.server.url,
      '--serving-ca-pin',
      d.pins.servingCaPin,
      '--join-signing-pin',
      otherPin,
      '--join-encryption-pin',
      d.pins.joinEncryptionKeyPin,
    ];
    const result = await join(root, [...args, '--token-file', file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/join signing pin differs/);
    expect(existsSync(path.join(root, 'etc'))).toBe(false);
    expect(existsSync(file)).toBe(true);
    expect(await d.database.db.joinToken.findUniqueOrThrow({ where: { id: tokenId(file) } })).toMatchObject({ usesLeft: 1 });
  });

  it('refuses a token file others can read, and a join with no config and no pins', async () => {
    const root = newRoot();
    const file = await tokenFile(root, 0o644);
    const readable = await join(root, ['--server', d.server.url, ...pinArgs(), '--token-file', file]);
    expect(readable.code).toBe(2);
    expect(readable.stderr).toMatch(/can be read by others/);
    const noPins = await join(root, ['--server', d.server.url], 'bcjt_x');
    expect(noPins.code).toBe(2);
    expect(noPins.stderr).toMatch(/needs --serving-ca-pin/);
  });
});

describe('the built bcd with no Node.js on PATH', () => {
  it('prints its version', async () => {
    const result = await run(d.bcd.binary, ['version'], { env: env(newRoot(), '/nonexistent') });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`bcd ${d.bcd.version} linux-amd64 (node ${process.versions.node})\n`);
  });
});
