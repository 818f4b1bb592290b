import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSystemdMachine, type SystemdMachine } from '../../test/bcd-ops/systemd-machine';
import { startBcdServer, type BcdBuild, type BcdServer } from '../../test/bcd-build';
import { defaultPool, newServerSecret, type ServerDatabase, type ServerProcess } from '../../test/server-process';
import { principalOf, type Principal } from '../authz/principal';
import { createJoinToken } from '../tokens/join-tokens';
import { generateInstallScript } from './generate';

// The install script's systemd branches on a real systemd: a machine whose PID 1 is systemd (test/bcd-ops/
// systemd-machine.ts: namespaces over an overlay of this host, as root), the generated script run in it as root
// without BCD_ROOT, the production server and a real gateway on the host. The join branch must enable and start
// every unit the script writes, and bcd.service must hold its session; a second run without a token must replace
// bcd in place and restart those units, touching nothing else.

const secret = newServerSecret();
let database: ServerDatabase;
let server: ServerProcess;
let gatewayUrl: string;
let bcd: BcdBuild;
let started: BcdServer | undefined;
let machine: SystemdMachine | undefined;
let admin: Principal;
let pool: { id: string; ownerTenantId: string };
const SCRIPT = '/root/install-bcd.sh';
// The real systemctl; the script finds a recording one first on PATH, which passes every call on to it.
const SYSTEMCTL = '/usr/bin/systemctl';
const CALLS = '/run/bcd-test-systemctl.calls';
const RECORDING_SYSTEMCTL = `#!/bin/sh
printf '%s\\n' "$*" >>${CALLS}
exec ${SYSTEMCTL} "$@"
`;

beforeAll(async () => {
  started = await startBcdServer('install_systemd', secret);
  ({ bcd, database, server, gatewayUrl } = started);
  process.env.BETTER_COMPUTE_SECRET = secret; // generateInstallScript reads the PKI like the server does
  pool = await defaultPool(database.db);
  admin = principalOf('local', 'install-systemd-test', [[pool.ownerTenantId, 'admin']]);
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
  machine = await startSystemdMachine({ productUuid: randomUUID(), serial: `SN-${randomUUID().slice(0, 8)}` });
  const copied = await machine.exec(['sh', '-c', `cat >${SCRIPT}`], { input: script });
  expect(copied.code, copied.stderr).toBe(0);
  const shim = await machine.exec(['sh', '-c', 'cat >/usr/local/sbin/systemctl && chmod 0755 /usr/local/sbin/systemctl'], {
    input: RECORDING_SYSTEMCTL,
  });
  expect(shim.code, shim.stderr).toBe(0);
}, 300_000);

afterAll(async () => {
  await machine?.stop();
  await started?.stop();
});

/** Runs a shell command in the machine; answers its standard output, trimmed, and fails on a non-zero exit. */
async function sh(command: string): Promise<string> {
  const result = await machine!.exec(['sh', '-c', command]);
  expect(result.code, `${command}: ${result.stderr}`).toBe(0);
  return result.stdout.trim();
}
const lines = (text: string) => text.split('\n').filter(Boolean);
const SERVICES = 'find /etc/systemd/system -maxdepth 1 -type f -name "*.service" | sort';
/** `systemctl show` properties of a unit, as an object. */
async function show(unit: string, ...properties: string[]): Promise<Record<string, string>> {
  const out = await sh(`${SYSTEMCTL} show ${unit} ${properties.map((p) => `-p ${p}`).join(' ')}`);
  return Object.fromEntries(lines(out).map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
}
const token = async () =>
  (
    await createJoinToken(database.db, admin, {
      tenantId: pool.ownerTenantId,
      poolId: pool.id,
      ttlSeconds: 3600,
      allowReclaim: false,
      idempotencyKey: `install-systemd-${randomUUID()}`,
      maxUses: 1,
    })
  ).token!;

/** Runs the install script in the machine with `input`; answers its run and the systemctl calls it made, in order. */
async function runScript(input: string) {
  await sh(`: >${CALLS}`);
  const result = await machine!.exec(['sh', SCRIPT], { input });
  return { result, calls: lines(await sh(`cat ${CALLS}`)) };
}
/** Whether some call is `verb` and names `unit`. */
const names = (calls: string[], verb: string, unit: string) =>
  calls.some((call) => call.split(' ')[0] === verb && call.split(' ').includes(unit));

async function waitForEvent(nodeId: string, type: string, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const events = await database.db.event.findMany({ where: { tenantId: pool.ownerTenantId, type } });
    if (events.some((e) => (e.data as { nodeId?: string }).nodeId === nodeId)) return;
    if (Date.now() > deadline) throw new Error(`no ${type} for ${nodeId} within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe('the install script on a machine whose PID 1 is systemd', () => {
  let units: string[] = [];
  let nodeId = '';

  it(
    'joins, installs the files, enables and starts every unit it writes; bcd.service holds its session',
    { timeout: 180_000 },
    async () => {
      const before = lines(await sh(SERVICES));
      const secretToken = await token();
      const result = await machine!.exec(['sh', SCRIPT], { input: `${secretToken}\n` });
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).not.toMatch(/systemd is not running/);
      expect(result.stdout + result.stderr).not.toContain(secretToken);

      units = lines(await sh(SERVICES))
        .filter((file) => !before.includes(file))
        .map((file) => file.slice('/etc/systemd/system/'.length));
      expect(units).toContain('bcd.service');
      for (const unit of units) {
        expect(await sh(`stat -c %a /etc/systemd/system/${unit}`), unit).toBe('644');
        expect((await machine!.exec([SYSTEMCTL, 'is-enabled', unit])).stdout.trim(), unit).toBe('enabled');
        const active = (await machine!.exec([SYSTEMCTL, 'is-active', unit])).stdout.trim();
        const journal = active === 'active' ? '' : (await machine!.exec(['journalctl', '--no-pager', '-n', '40', '-u', unit])).stdout;
        expect(active, `${unit}\n${journal}`).toBe('active');
        // Enabled means linked into the target its [Install] section names, so it starts at boot.
        const wantedBy = /^WantedBy=(\S+)$/m.exec(await sh(`cat /etc/systemd/system/${unit}`))![1]!;
        expect(await sh(`readlink /etc/systemd/system/${wantedBy}.wants/${unit}`), unit).toBe(`/etc/systemd/system/${unit}`);
      }
      expect((await show('bcd.service', 'ExecStart')).ExecStart).toContain(
        'path=/usr/local/bin/bcd ; argv[]=/usr/local/bin/bcd node --config /etc/bcd/config.toml',
      );

      // The files, with the spec's modes; the token is on none of them.
      expect(await sh('sha256sum /usr/local/bin/bcd | cut -d " " -f 1')).toBe(bcd.sha256);
      expect(await sh('stat -c "%n %a" /usr/local/bin/bcd /etc/bcd/config.toml /etc/bcd/join-encryption.jwk /var/lib/bcd')).toBe(
        ['/usr/local/bin/bcd 755', '/etc/bcd/config.toml 640', '/etc/bcd/join-encryption.jwk 644', '/var/lib/bcd 700'].join('\n'),
      );
      const leaked = await machine!.exec(['grep', '-rlF', secretToken, '/etc', '/var/lib/bcd', '/usr/local/bin']);
      expect(leaked.stdout).toBe('');

      nodeId = (JSON.parse(await sh('cat /var/lib/bcd/identity.json')) as { nodeId: string }).nodeId;
      expect(await database.db.node.findUniqueOrThrow({ where: { id: nodeId } })).toMatchObject({ poolId: pool.id, state: 'adopted' });
      // The daemon systemd started reaches the gateway: its first session publishes node.connected.
      await waitForEvent(nodeId, 'node.connected');

      // Both still run, never restarted: the helper handed its socket to bcd, and says the machine has no TPM
      // (its /dev has none), refusing TPM requests rather than failing.
      for (const unit of units)
        expect(await show(unit, 'ActiveState', 'NRestarts'), unit).toEqual({ ActiveState: 'active', NRestarts: '0' });
      expect(await sh('stat -c "%F %a %U:%G" /run/bcd-helper/helper.sock')).toBe('socket 600 bcd:bcd');
      const helperLog = await sh('journalctl --no-pager -o cat -u bcd-helper.service');
      expect(helperLog).toMatch(/^bcd helper listening on \/run\/bcd-helper\/helper.sock for uid \d+$/m);
      expect(helperLog).toContain('bcd helper: this host has no TPM (/dev/tpmrm0 does not exist)');
      // bcd.service's sandbox is the real one: its own user namespace (PrivateUsers=) and a /dev without the machine's.
      const mainPid = (await show('bcd.service', 'MainPID')).MainPID;
      expect(await sh(`cat /proc/${mainPid}/uid_map | wc -l`)).not.toBe('1');
      expect(await sh('findmnt -n -o SOURCE /dev')).toBe('bcd-dev');
      expect(await sh(`nsenter -t ${mainPid} -m findmnt -n -o SOURCE /dev`)).not.toBe('bcd-dev');
    },
  );

  it('without a token, upgrades bcd in place and restarts every unit it wrote, touching nothing else', { timeout: 180_000 }, async () => {
    expect(units).toContain('bcd.service');
    const before = await Promise.all(units.map((unit) => show(unit, 'InvocationID', 'MainPID')));
    const kept = await sh(
      'sha256sum /etc/bcd/config.toml /etc/bcd/join-encryption.jwk /var/lib/bcd/identity.json /etc/systemd/system/*.service',
    );
    const nodes = await database.db.node.count();
    // The old binary: another file renamed into place (a running executable cannot be written to).
    await sh(
      'printf old >/usr/local/bin/bcd.previous && chmod 0755 /usr/local/bin/bcd.previous && mv /usr/local/bin/bcd.previous /usr/local/bin/bcd',
    );

    const { result, calls } = await runScript('');
    expect(result.code, result.stdout + result.stderr).toBe(0);
    // An upgrade only restarts: no unit is rewritten, enabled or reloaded.
    expect(calls.filter((call) => !call.startsWith('restart '))).toEqual([]);
    for (const unit of units) expect(names(calls, 'restart', unit), `${unit} restarted: ${calls.join('; ')}`).toBe(true);
    expect(result.stdout).toMatch(/upgraded \/usr\/local\/bin\/bcd to bcd /);
    expect(await sh('sha256sum /usr/local/bin/bcd | cut -d " " -f 1')).toBe(bcd.sha256);
    expect(await sh('stat -c %a /usr/local/bin/bcd')).toBe('755');

    for (const [index, unit] of units.entries()) {
      const after = await show(unit, 'InvocationID', 'MainPID', 'NRestarts');
      expect(after.InvocationID, `${unit} was restarted`).not.toBe(before[index]!.InvocationID);
      expect(after.MainPID, unit).not.toBe(before[index]!.MainPID);
      expect(after.NRestarts, unit).toBe('0');
      expect((await machine!.exec([SYSTEMCTL, 'is-active', unit])).stdout.trim(), unit).toBe('active');
      expect((await machine!.exec([SYSTEMCTL, 'is-enabled', unit])).stdout.trim(), unit).toBe('enabled');
    }
    expect(
      await sh('sha256sum /etc/bcd/config.toml /etc/bcd/join-encryption.jwk /var/lib/bcd/identity.json /etc/systemd/system/*.service'),
    ).toBe(kept);
    expect(await database.db.node.count()).toBe(nodes);
  });

  it(
    'run again with a token on the joined host, spends nothing and restarts every unit on the bcd it installed',
    { timeout: 180_000 },
    async () => {
      const before = await Promise.all(units.map((unit) => show(unit, 'InvocationID')));
      const identity = await sh('cat /var/lib/bcd/identity.json');
      const unspent = await token();
      const result = await machine!.exec(['sh', SCRIPT], { input: `${unspent}\n` });
      expect(result.code, result.stdout + result.stderr).toBe(0);
      expect(result.stdout).toContain(`already joined: node ${nodeId}`);
      expect(await database.db.joinToken.findUniqueOrThrow({ where: { id: unspent.slice(5).split('.')[0]! } })).toMatchObject({
        usesLeft: 1,
      });
      expect(await sh('cat /var/lib/bcd/identity.json')).toBe(identity);
      for (const [index, unit] of units.entries()) {
        // The script installed bcd (and the units) again: what runs must be what it installed.
        expect((await show(unit, 'InvocationID')).InvocationID, `${unit} was restarted`).not.toBe(before[index]!.InvocationID);
        expect((await machine!.exec([SYSTEMCTL, 'is-active', unit])).stdout.trim(), unit).toBe('active');
      }
    },
  );
});
