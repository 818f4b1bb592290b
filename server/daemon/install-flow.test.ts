import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { newMachineRoot as newRoot, run } from '../../test/bcd-build';
import { useBcdDeployment } from '../../test/daemon/deployment';
import { env, mode, runScript, scriptFile, sha } from '../../test/daemon/install-flow';
import { installedBcd, nodeIdOf } from '../../test/daemon/machine';
import { tokenIdOf, usesLeftOf } from '../../test/daemon/tokens';

// The install script and bcd end to end: the production server (test/server-main.ts, serving the download
// route from a directory holding the real built bcd), the generated script run by sh with a BCD_ROOT prefix,
// and the installed bcd joining, answering `already joined`, upgrading and resetting (bcd-join-flow.test.ts:
// the way back and the bootstrap from the well-known document).

const d = useBcdDeployment('install_flow', { allowReclaim: true, pins: true });
let goodScript: string;

beforeAll(async () => {
  goodScript = await scriptFile(d, { amd64: d.bcd.sha256 });
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
    const token = await d.newToken();
    const wrong = 'ab'.repeat(32);
    const result = await runScript(await scriptFile(d, { amd64: wrong }), root, { token });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`expected ${wrong}, got ${d.bcd.sha256}`);
    expect(readdirSync(root)).toEqual(['sys']);
    // The token still joins: the script stopped before bcd ever ran.
    const again = await runScript(goodScript, root, { input: `${token}\n` });
    expect(again.code, again.stderr).toBe(0);
  });

  it('with a token JoinService refuses leaves nothing installed, so no config names a missing identity', { timeout: 120_000 }, async () => {
    const root = newRoot();
    const token = await d.newToken();
    await d.database.db.joinToken.update({ where: { id: tokenIdOf(token) }, data: { usesLeft: 0 } });
    const result = await runScript(goodScript, root, { token });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/Join refused[\s\S]*bcd join failed; nothing was installed/);
    expect(readdirSync(root)).toEqual(['sys']);
  });

  it('installs the files with the spec modes, joins, upgrades, answers already joined and resets', { timeout: 240_000 }, async () => {
    const root = newRoot();
    const token = await d.newToken();
    const first = await runScript(goodScript, root, { input: `${token}\n` });
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout + first.stderr).not.toContain(token);
    expect(first.stdout).toMatch(/systemd is not running here/);
    expect(sha(installedBcd(root))).toBe(d.bcd.sha256);
    expect(mode(installedBcd(root))).toBe('755');
    expect(mode(path.join(root, 'etc/bcd/config.toml'))).toBe('600');
    expect(mode(path.join(root, 'etc/bcd/join-encryption.jwk'))).toBe('644');
    expect(mode(path.join(root, 'var/lib/bcd'))).toBe('700');
    const config = readFileSync(path.join(root, 'etc/bcd/config.toml'), 'utf8');
    expect(config).toContain(`site = "${d.pool.siteId}"`);
    expect(config).toContain(`join_encryption_key_pin = "${d.pins.joinEncryptionKeyPin}"`);
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
    const node = await d.database.db.node.findUniqueOrThrow({ where: { id: nodeIdOf(root) } });
    // The default pool runs no acceptance checks, so JoinService adopts the node at once.
    expect(node).toMatchObject({ poolId: d.pool.id, state: 'adopted' });
    const events = await d.database.db.event.findMany({
      where: { tenantId: d.pool.ownerTenantId, type: { startsWith: 'node.' } },
      orderBy: { id: 'asc' },
    });
    expect(events.filter((event) => JSON.stringify(event.data).includes(node.id)).map((event) => event.type)).toContain('node.joined');

    const doctor = await run(installedBcd(root), ['doctor'], { env: env(root, '/nonexistent') });
    expect(doctor.code, doctor.stdout).toBe(0);
    expect(doctor.stdout).toMatch(new RegExp(`ok +identity +node ${nodeIdOf(root)}`));

    // Run again without a token: bcd is upgraded in place (here: a damaged binary is replaced).
    writeFileSync(installedBcd(root), 'old');
    const upgrade = await runScript(goodScript, root);
    expect(upgrade.code, upgrade.stderr).toBe(0);
    expect(upgrade.stdout).toMatch(/upgraded/);
    expect(sha(installedBcd(root))).toBe(d.bcd.sha256);

    // A joined machine does not spend a token.
    const unspent = await d.newToken();
    const joined = await run(installedBcd(root), ['join'], { env: env(root), input: unspent });
    expect(joined.code).toBe(0);
    expect(joined.stdout).toMatch(/^already joined: node /);
    expect(await usesLeftOf(d.database.db, unspent)).toBe(1);

    // --reset needs --yes; with it the old identity is moved aside and the machine joins again.
    const refused = await run(installedBcd(root), ['join', '--reset'], { env: env(root), input: unspent });
    expect(refused.code).toBe(2);
    const reset = await run(installedBcd(root), ['join', '--reset', '--yes', '--server', d.server.url], { env: env(root), input: unspent });
    expect(reset.code, reset.stderr).toBe(0);
    expect(
      readdirSync(path.join(root, 'var/lib/bcd'))
        .filter((name) => name.includes('.reset-'))
        .sort(),
    ).toHaveLength(2);
    expect(reset.stdout).toMatch(/^joined: node /);
    expect(await usesLeftOf(d.database.db, unspent)).toBe(0);
  });
});
