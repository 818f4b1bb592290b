import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, startBcdServer, type BcdBuild, type BcdServer } from '../../test/bcd-build';
import { defaultPool, newServerSecret, type ServerDatabase, type ServerProcess } from '../../test/server-process';
import { principalOf, type Principal } from '../authz/principal';
import { createJoinToken } from '../tokens/join-tokens';
import { generateInstallScript } from './generate';

// The install script as it runs on a real host (no BCD_ROOT): in a private mount namespace whose /etc is a copy
// of this machine's and whose /var/lib and /usr/local/bin are empty, so the host is never touched. The script
// creates the user bcd, joins (the root join hands the identity to bcd), installs config.toml root:bcd 0640 with
// its [helper] table and both units; then `bcd node --once` as bcd renews the software identity by itself.
const secret = newServerSecret();
let database: ServerDatabase;
let server: ServerProcess;
let gatewayUrl: string;
let bcd: BcdBuild;
let started: BcdServer | undefined;
let admin: Principal;
let pool: { id: string; ownerTenantId: string; siteId: string };
const scratch: string[] = [];

beforeAll(async () => {
  started = await startBcdServer('install_helper', secret);
  ({ bcd, database, server, gatewayUrl } = started);
  process.env.BETTER_COMPUTE_SECRET = secret; // generateInstallScript reads the PKI like the server does
  pool = await defaultPool(database.db);
  admin = principalOf('local', 'install-helper-test', [[pool.ownerTenantId, 'admin']]);
}, 300_000);
afterAll(async () => {
  await started?.stop();
  scratch.forEach((dir) => rmSync(dir, { recursive: true, force: true }));
});

/** What runs inside the namespace: the install, then what the test checks, one `key value` line each. */
const inNamespace = `set -eu
T=$1
mkdir "$T/etc" "$T/varlib" "$T/bin"
cp -a /etc/. "$T/etc/"
mount --bind "$T/etc" /etc
mount --bind "$T/varlib" /var/lib
mount --bind "$T/bin" /usr/local/bin
# This machine's identifiers, as a real host has them (root-only, as the kernel makes them).
mkdir -p "$T/sysclass/dmi/id"
cat /proc/sys/kernel/random/uuid > "$T/sysclass/dmi/id/product_uuid"
echo "SN-$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' ')" > "$T/sysclass/dmi/id/product_serial"
chmod 0400 "$T/sysclass/dmi/id/product_uuid" "$T/sysclass/dmi/id/product_serial"
mount --bind "$T/sysclass" /sys/class
sh "$T/install-bcd.sh" < "$T/token" > "$T/install.log" 2>&1 || { cat "$T/install.log"; exit 1; }
cat "$T/install.log"
echo "user $(id -u bcd):$(id -g bcd)"
echo "data $(stat -c '%u:%g %a' /var/lib/bcd)"
for f in identity.json node.key; do echo "file $f $(stat -c '%u:%g %a' "/var/lib/bcd/$f")"; done
echo "config $(stat -c '%u:%g %a' /etc/bcd/config.toml)"
grep -A2 '^\\[helper\\]' /etc/bcd/config.toml
for u in bcd.service bcd-helper.service; do echo "unit $u $(grep -c . "/etc/systemd/system/$u")"; done
echo "--- root node"
/usr/local/bin/bcd node --once --config /etc/bcd/config.toml 2>&1 || echo "exit $?"
echo "--- bcd node"
setpriv --reuid=bcd --regid=bcd --clear-groups /usr/local/bin/bcd node --once --config /etc/bcd/config.toml 2>&1 || echo "exit $?"
`;

describe('the install script on a host (a private mount namespace)', () => {
  it('creates bcd, hands it the identity, and its bcd node renews', { timeout: 240_000 }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'bcd-host-'));
    scratch.push(dir);
    const { script } = await generateInstallScript(
      database.db,
      admin,
      {
        tenantId: pool.ownerTenantId,
        poolId: pool.id,
        gatewayUrl,
        baseUrl: server.url,
        bcdVersion: bcd.version,
        sha256: { amd64: bcd.sha256 },
      },
      bcd.dir,
    );
    writeFileSync(path.join(dir, 'install-bcd.sh'), script);
    const token = await createJoinToken(database.db, admin, {
      tenantId: pool.ownerTenantId,
      poolId: pool.id,
      ttlSeconds: 3600,
      allowReclaim: false,
      idempotencyKey: 'install-helper-1',
      maxUses: 1,
    });
    writeFileSync(path.join(dir, 'token'), `${token.token!}\n`, { mode: 0o600 });
    writeFileSync(path.join(dir, 'host.sh'), inNamespace);
    const result = await run('unshare', ['-m', '--propagation', 'private', 'sh', path.join(dir, 'host.sh'), dir], {
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } as unknown as NodeJS.ProcessEnv,
    });
    const out = result.stdout + result.stderr;
    expect(result.code, out).toBe(0);
    expect(out).toContain('created the system user bcd');
    expect(out).toContain('handed /var/lib/bcd to bcd for bcd node');
    const ids = /^user (\d+:\d+)$/m.exec(out)![1];
    expect(out).toMatch(new RegExp(`^data ${ids} 700$`, 'm'));
    expect(out).toMatch(new RegExp(`^file identity.json ${ids} 600$`, 'm'));
    expect(out).toMatch(new RegExp(`^file node.key ${ids} 600$`, 'm'));
    expect(out).toMatch(new RegExp(`^config 0:${ids!.split(':')[1]} 640$`, 'm'));
    expect(out).toContain('[helper]\nuser = "bcd"\nsocket = "/run/bcd-helper/helper.sock"');
    expect(out).toMatch(/^unit bcd\.service [1-9]\d*$/m);
    expect(out).toMatch(/^unit bcd-helper\.service [1-9]\d*$/m);
    const [, rootNode, bcdNode] = out.split(/^--- (?:root|bcd) node$/m);
    expect(rootNode).toContain('refusing to run as root under [helper]');
    expect(rootNode).toContain('exit 2');
    expect(bcdNode).toContain('renewed spiffe://');
    expect(bcdNode).not.toMatch(/^exit /m);
  });
});
