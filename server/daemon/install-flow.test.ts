import { createHash, generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newMachineRoot as newRoot, run, startBcdServer, type BcdBuild, type BcdServer } from '../../test/bcd-build';
import { defaultPool, newServerSecret, type ServerDatabase, type ServerProcess } from '../../test/server-process';
import { principalOf, type Principal } from '../authz/principal';
import { loadPki } from '../pki/bundle/store';
import { installPins } from '../pki/pins-summary';
import { createJoinToken } from '../tokens/join-tokens';
import { generateInstallScript } from './generate';
import { pinnedFetch } from '../../agent/bcd/pinned-fetch';

// The install script and bcd end to end: the production server (test/server-main.ts, serving the download
// route from a directory holding the real built bcd), the generated script run by sh with a BCD_ROOT prefix,
// and the installed bcd joining, answering `already joined`, resetting and bootstrapping from the document.

const secret = newServerSecret();
const PATH = '/usr/bin:/bin';
let database: ServerDatabase;
let server: ServerProcess;
let gatewayUrl: string;
let bcd: BcdBuild;
let started: BcdServer | undefined;
let admin: Principal;
let pool: { id: string; ownerTenantId: string; siteId: string };
let goodScript: string;
let pins: ReturnType<typeof installPins>;
let tokens = 0;

const newToken = async () =>
  (
    await createJoinToken(database.db, admin, {
      tenantId: pool.ownerTenantId,
      poolId: pool.id,
      ttlSeconds: 3600,
      allowReclaim: true,
      idempotencyKey: `install-flow-${++tokens}`,
      maxUses: 1,
    })
  ).token!;
const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);

async function scriptFile(sha256: { amd64?: string }) {
  const { script } = await generateInstallScript(
    database.db,
    admin,
    { tenantId: pool.ownerTenantId, poolId: pool.id, gatewayUrl, baseUrl: server.url, bcdVersion: bcd.version, sha256 },
    bcd.dir,
  );
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'bcd-script-')), 'install-bcd.sh');
  writeFileSync(file, script);
  return file;
}

const env = (root: string, path = PATH, extra: Record<string, string> = {}) =>
  ({ PATH: path, BCD_ROOT: root, ...extra }) as unknown as NodeJS.ProcessEnv;
const runScript = (script: string, root: string, options: { token?: string; input?: string; args?: string[] } = {}) =>
  run('sh', [script, ...(options.args ?? [])], {
    env: env(root, PATH, options.token ? { BCD_JOIN_TOKEN: options.token } : {}),
    input: options.input,
  });
const installed = (root: string) => path.join(root, 'usr/local/bin/bcd');
const nodeId = (root: string) => JSON.parse(readFileSync(path.join(root, 'var/lib/bcd/identity.json'), 'utf8')).nodeId as string;

beforeAll(async () => {
  // A real gateway: bcd doctor checks that it answers under the pinned serving CA.
  started = await startBcdServer('install_flow', secret);
  ({ bcd, database, server, gatewayUrl } = started);
  process.env.BETTER_COMPUTE_SECRET = secret; // generateInstallScript reads the PKI like the server does
  pool = await defaultPool(database.db);
  admin = principalOf('local', 'install-flow-test', [[pool.ownerTenantId, 'admin']]);
  pins = installPins(await loadPki(database.db, secret));
  goodScript = await scriptFile({ amd64: bcd.sha256 });
}, 300_000);

afterAll(async () => {
  await started?.stop();
});

describe('the install script, before any download', () => {
  it.each([
    ['a token in argv', { args: ['bcjt_jt_00000000000000000000000000.x'] }, /takes no arguments/],
    ['a malformed token', { token: 'not-a-token' }, /not a join token/],
    ['a token with a shell character', { token: 'bcjt_x;id' }, /not a join token/],
    ['an empty standard input', { input: '' }, /no join token/],
  ])('refuses %s and installs nothing', async (_name, options, message) => {
    const root = newRoot();
    const result = await runScript(goodScript, root, options);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).not.toMatch(/downloading/);
    expect(readdirSync(root)).toEqual(['sys']);
  });
});

describe('the install script, end to end', () => {
  it('with a wrong digest installs nothing, names both digests and leaves the token unspent', { timeout: 120_000 }, async () => {
    const root = newRoot();
    const token = await newToken();
    const wrong = 'ab'.repeat(32);
    const result = await runScript(await scriptFile({ amd64: wrong }), root, { token });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`expected ${wrong}, got ${bcd.sha256}`);
    expect(readdirSync(root)).toEqual(['sys']);
    // The token still joins: the script stopped before bcd ever ran.
    const again = await runScript(goodScript, root, { input: `${token}\n` });
    expect(again.code, again.stderr).toBe(0);
  });

  it('with a token JoinService refuses leaves nothing installed, so no config names a missing identity', { timeout: 120_000 }, async () => {
    const root = newRoot();
    const token = await newToken();
    await database.db.joinToken.update({ where: { id: token.slice(5).split('.')[0]! }, data: { usesLeft: 0 } });
    const result = await runScript(goodScript, root, { token });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/Join refused[\s\S]*bcd join failed; nothing was installed/);
    expect(readdirSync(root)).toEqual(['sys']);
  });

  it('installs the files with the spec modes, joins, upgrades, answers already joined and resets', { timeout: 240_000 }, async () => {
    const root = newRoot();
    const token = await newToken();
    const first = await runScript(goodScript, root, { input: `${token}\n` });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout + first.stderr).not.toContain(token);
    expect(first.stdout).toMatch(/systemd is not running here/);
    expect(sha(installed(root))).toBe(bcd.sha256);
    expect(mode(installed(root))).toBe('755');
    expect(mode(path.join(root, 'etc/bcd/config.toml'))).toBe('600');
    expect(mode(path.join(root, 'etc/bcd/join-encryption.jwk'))).toBe('644');
    expect(mode(path.join(root, 'var/lib/bcd'))).toBe('700');
    const config = readFileSync(path.join(root, 'etc/bcd/config.toml'), 'utf8');
    expect(config).toContain(`site = "${pool.siteId}"`);
    expect(config).toContain(`join_encryption_key_pin = "${pins.joinEncryptionKeyPin}"`);
    const unit = readFileSync(path.join(root, 'etc/systemd/system/bcd.service'), 'utf8');
    for (const line of [
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      // bcd node writes only its state: /etc/bcd is read-only to it.
      'ReadWritePaths=/var/lib/bcd\n',
      'PrivateTmp=yes',
      'Restart=on-failure',
    ])
      expect(unit).toContain(line);
    const node = await database.db.node.findUniqueOrThrow({ where: { id: nodeId(root) } });
    // The default pool runs no acceptance checks, so JoinService adopts the node at once.
    expect(node).toMatchObject({ poolId: pool.id, state: 'adopted' });
    const events = await database.db.event.findMany({
      where: { tenantId: pool.ownerTenantId, type: { startsWith: 'node.' } },
      orderBy: { id: 'asc' },
    });
    expect(events.filter((event) => JSON.stringify(event.data).includes(node.id)).map((event) => event.type)).toContain('node.joined');

    const doctor = await run(installed(root), ['doctor'], { env: env(root, '/nonexistent') });
    expect(doctor.code, doctor.stdout).toBe(0);
    expect(doctor.stdout).toMatch(new RegExp(`ok +identity +node ${nodeId(root)}`));

    // Run again without a token: bcd is upgraded in place (here: a damaged binary is replaced).
    writeFileSync(installed(root), 'old');
    const upgrade = await runScript(goodScript, root);
    expect(upgrade.code, upgrade.stderr).toBe(0);
    expect(upgrade.stdout).toMatch(/upgraded/);
    expect(sha(installed(root))).toBe(bcd.sha256);

    // A joined machine does not spend a token.
    const unspent = await newToken();
    const joined = await run(installed(root), ['join'], { env: env(root), input: unspent });
    expect(joined.code).toBe(0);
    expect(joined.stdout).toMatch(/^already joined: node /);
    expect(await database.db.joinToken.findUniqueOrThrow({ where: { id: unspent.slice(5).split('.')[0]! } })).toMatchObject({
      usesLeft: 1,
    });

    // --reset needs --yes; with it the old identity is moved aside and the machine joins again.
    const refused = await run(installed(root), ['join', '--reset'], { env: env(root), input: unspent });
    expect(refused.code).toBe(2);
    const reset = await run(installed(root), ['join', '--reset', '--yes', '--server', server.url], { env: env(root), input: unspent });
    expect(reset.code, reset.stderr).toBe(0);
    expect(
      readdirSync(path.join(root, 'var/lib/bcd'))
        .filter((name) => name.includes('.reset-'))
        .sort(),
    ).toHaveLength(2);
    expect(reset.stdout).toMatch(/^joined: node /);
    expect(await database.db.joinToken.findUniqueOrThrow({ where: { id: unspent.slice(5).split('.')[0]! } })).toMatchObject({
      usesLeft: 0,
    });
  });
});

describe('the documented way back: bcd join --config /etc/bcd/config.toml --reset --yes < token', () => {
  it(
    'joins again through the gateway alone on a host the script installed, moving every identity file aside',
    { timeout: 240_000 },
    async () => {
      const root = newRoot();
      const bcdDir = path.join(root, 'var/lib/bcd');
      const installedRun = await runScript(goodScript, root, { token: await newToken() });
      expect(installedRun.code, installedRun.stderr).toBe(0);
      const first = nodeId(root);
      // A renewal through the gateway, as bcd.service makes them: the replaced pair stays as *.previous.
      const renewed = await run(installed(root), ['node', '--once'], { env: env(root, '/nonexistent') });
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
      const viaGateway = await pinnedFetch({ servingCaPin: pins.servingCaPin })(`${gatewayUrl}/api/compute/.well-known/better-compute`);
      expect(viaGateway.status).toBe(200);
      expect(await viaGateway.json()).toEqual(await (await fetch(`${server.url}/api/compute/.well-known/better-compute`)).json());

      // Exactly the documented command: the installed config, no --server, the token on standard input.
      const token = await newToken();
      const again = await run(installed(root), ['join', '--config', path.join(root, 'etc/bcd/config.toml'), '--reset', '--yes'], {
        env: env(root, '/nonexistent'),
        input: `${token}\n`,
      });
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toMatch(/^joined: node /);
      // The same machine (its hardware key), so the token's allowReclaim gives it back its node.
      expect(nodeId(root)).toBe(first);
      expect(await database.db.joinToken.findUniqueOrThrow({ where: { id: token.slice(5).split('.')[0]! } })).toMatchObject({
        usesLeft: 0,
      });
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
      const next = await run(installed(root), ['node', '--once'], { env: env(root, '/nonexistent') });
      expect(next.code, next.stdout + next.stderr).toBe(0);
    },
  );
});

describe('bcd join from the well-known document', () => {
  const join = (root: string, args: string[], input = '') => run(bcd.binary, ['join', ...args], { env: env(root), input });
  const pinArgs = () => [
    '--serving-ca-pin',
    pins.servingCaPin,
    '--join-signing-pin',
    pins.joinSigningKeyPin,
    '--join-encryption-pin',
    pins.joinEncryptionKeyPin,
  ];
  async function tokenFile(root: string, fileMode = 0o600) {
    const file = path.join(root, 'token');
    writeFileSync(file, `${await newToken()}\n`, { mode: fileMode });
    return file;
  }
  const tokenId = (file: string) => readFileSync(file, 'utf8').trim().slice(5).split('.')[0]!;

  it(
    'with a join-encryption.jwk that does not match the pin, fails clearly, with or without --server, and spends nothing',
    { timeout: 120_000 },
    async () => {
      const root = newRoot();
      const installedRun = await runScript(goodScript, root, { token: await newToken() });
      expect(installedRun.code, installedRun.stderr).toBe(0);
      const identityBefore = readFileSync(path.join(root, 'var/lib/bcd/identity.json'), 'utf8');
      const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      writeFileSync(path.join(root, 'etc/bcd/join-encryption.jwk'), JSON.stringify(publicKey.export({ format: 'jwk' })));
      const token = await newToken();
      for (const extra of [[], ['--server', server.url]]) {
        const result = await join(root, ['--config', path.join(root, 'etc/bcd/config.toml'), '--reset', '--yes', ...extra], token);
        expect(result.code).toBe(1);
        expect(result.stderr).toMatch(
          /join-encryption\.jwk does not match join_encryption_key_pin; after a join key rotation, generate the install script again and rerun it/,
        );
        expect(result.stderr).not.toContain(token);
      }
      expect(readFileSync(path.join(root, 'var/lib/bcd/identity.json'), 'utf8')).toBe(identityBefore);
      expect(readdirSync(path.join(root, 'var/lib/bcd')).filter((name) => name.includes('.reset-'))).toEqual([]);
      expect(await database.db.joinToken.findUniqueOrThrow({ where: { id: token.slice(5).split('.')[0]! } })).toMatchObject({
        usesLeft: 1,
      });
    },
  );

  it(
    'with no config.toml, joins with the three pins and then writes config.toml and join-encryption.jwk',
    { timeout: 120_000 },
    async () => {
      const root = newRoot();
      const file = await tokenFile(root);
      const result = await join(root, ['--server', server.url, ...pinArgs(), '--token-file', file]);
      expect(result.code, result.stderr).toBe(0);
      expect(existsSync(file)).toBe(false);
      const config = readFileSync(path.join(root, 'etc/bcd/config.toml'), 'utf8');
      expect(config).toContain(`gateway_url = "${gatewayUrl}"`);
      expect(config).toContain(`site = "${pool.siteId}"`);
      expect(config).toContain(`serving_ca_spki_pin = "${pins.servingCaPin}"`);
      expect(mode(path.join(root, 'etc/bcd/config.toml'))).toBe('600');
      expect(mode(path.join(root, 'etc/bcd/join-encryption.jwk'))).toBe('644');
      const doctor = await run(bcd.binary, ['doctor'], { env: env(root, '/nonexistent') });
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
      server.url,
      '--serving-ca-pin',
      pins.servingCaPin,
      '--join-signing-pin',
      otherPin,
      '--join-encryption-pin',
      pins.joinEncryptionKeyPin,
    ];
    const result = await join(root, [...args, '--token-file', file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/join signing pin differs/);
    expect(existsSync(path.join(root, 'etc'))).toBe(false);
    expect(existsSync(file)).toBe(true);
    expect(await database.db.joinToken.findUniqueOrThrow({ where: { id: tokenId(file) } })).toMatchObject({ usesLeft: 1 });
  });

  it('refuses a token file others can read, and a join with no config and no pins', async () => {
    const root = newRoot();
    const file = await tokenFile(root, 0o644);
    const readable = await join(root, ['--server', server.url, ...pinArgs(), '--token-file', file]);
    expect(readable.code).toBe(2);
    expect(readable.stderr).toMatch(/can be read by others/);
    const noPins = await join(root, ['--server', server.url], 'bcjt_x');
    expect(noPins.code).toBe(2);
    expect(noPins.stderr).toMatch(/needs --serving-ca-pin/);
  });
});

describe('the built bcd with no Node.js on PATH', () => {
  it('prints its version', async () => {
    const result = await run(bcd.binary, ['version'], { env: env(newRoot(), '/nonexistent') });
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`bcd ${bcd.version} linux-amd64 (node ${process.versions.node})\n`);
  });
});
