import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { run, type Run } from '../bcd-build';

/**
 * A machine with a real systemd as its PID 1, for the install script's systemd branches: systemd runs in new
 * mount, PID and cgroup namespaces (`unshare -m -p -f -C`, as root) on an overlay of the host's root file system
 * whose upper layer is a tmpfs, so whatever the machine installs vanishes with it. It shares the host's network
 * (so the install script downloads from the test server and bcd.service reaches the test gateway), sees its own
 * DMI product UUID and serial and a /dev of its own (with its own ptys, and no TPM), and boots an empty target:
 * only the units a test starts run. Its /sys is read-only and the units that would touch the shared kernel or
 * network (udev, sysctl, modules, networking, mDNS, timers) are masked. The overlay becomes the namespace's root
 * by pivot_root, as a booted host's root is, so units run with their real sandboxing (PrivateDevices=,
 * PrivateUsers=, ProtectSystem=, ...). Each cgroup hierarchy gets a fresh child of the caller's cgroup as the
 * machine's cgroup root, removed again by {@link SystemdMachine.stop}.
 */
export interface SystemdMachine {
  /** systemd's process id, as the host sees it. */
  pid: number;
  /**
   * Runs `command` as root inside the machine with exactly `env` (plus a PATH; the values travel as arguments of
   * env(1), so keep secrets to `input`) and `input` on standard input.
   */
  exec(command: string[], options?: { env?: Record<string, string>; input?: string }): Promise<Run>;
  /** Powers the machine off (SIGKILL if it does not stop), and removes its cgroups. */
  stop(): Promise<void>;
}

const MACHINE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

// Units that must not run on a machine that shares the host's kernel and network.
const MASKED = [
  'systemd-udevd.service',
  'systemd-udev-trigger.service',
  'systemd-udev-settle.service',
  'systemd-sysctl.service',
  'systemd-modules-load.service',
  'systemd-remount-fs.service',
  'systemd-pstore.service',
  'systemd-timesyncd.service',
  'systemd-networkd.service',
  'systemd-networkd.socket',
  'systemd-networkd-wait-online.service',
  'systemd-resolved.service',
  'networking.service',
  'ifupdown-wait-online.service',
  'NetworkManager-wait-online.service',
  'avahi-daemon.service',
  'avahi-daemon.socket',
  'getty@tty1.service',
  'timers.target',
];

// Runs inside the new namespaces: builds the machine's root and becomes its systemd.
const BOOT = `
set -eu
base=$1 uuid=$2 serial=$3
shift 3
mount -t tmpfs -o mode=0700 bcd-machine "$base"
mkdir "$base/upper" "$base/work" "$base/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$base/upper,workdir=$base/work" "$base/root"
R=$base/root
mount -t proc proc "$R/proc"
# Its own /dev: the few device nodes a daemon uses, bound from the host, so nothing in it reaches the host's devtmpfs.
mount -t tmpfs -o mode=0755,nosuid bcd-dev "$R/dev"
for node in null zero full random urandom tty; do
  : >"$R/dev/$node"
  mount --bind "/dev/$node" "$R/dev/$node"
done
mkdir "$R/dev/pts" "$R/dev/shm"
# Ptys of its own, as a host has: PrivateDevices= (bcd.service) copies /dev/ptmx and binds /dev/pts, and fails
# the unit (226/NAMESPACE, "/run/systemd/unit-root/dev: No such file or directory") when /dev/ptmx is missing.
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620,nosuid,noexec bcd-pts "$R/dev/pts"
ln -s pts/ptmx "$R/dev/ptmx"
mount -t tmpfs -o mode=1777,nosuid,nodev bcd-shm "$R/dev/shm"
ln -s /proc/self/fd "$R/dev/fd"
ln -s /proc/self/fd/0 "$R/dev/stdin"
ln -s /proc/self/fd/1 "$R/dev/stdout"
ln -s /proc/self/fd/2 "$R/dev/stderr"
mount --rbind /sys "$R/sys"
# The machine's own DMI identifiers, beside the host's classes (the host may have no DMI at all).
mount -t tmpfs -o mode=0755 bcd-sys-class "$R/sys/class"
for entry in /sys/class/*; do
  mkdir "$R$entry"
  mount --bind "$entry" "$R$entry"
done
mkdir -p "$R/sys/class/dmi/id"
printf '%s\\n' "$uuid" >"$R/sys/class/dmi/id/product_uuid"
printf '%s\\n' "$serial" >"$R/sys/class/dmi/id/product_serial"
mount -o remount,ro "$R/sys/class"
mount -o remount,ro,bind "$R/sys"
mount -t tmpfs -o mode=0755 bcd-run "$R/run"
mount -t tmpfs bcd-tmp "$R/tmp"
mkdir -p "$R/etc/systemd/system"
for unit in "$@"; do
  rm -f "$R/etc/systemd/system/$unit"
  ln -s /dev/null "$R/etc/systemd/system/$unit"
done
printf '[Unit]\\nDescription=The test machine: only what its tests start\\n' >"$R/etc/systemd/system/bcd-test.target"
# pivot_root, not chroot: the kernel refuses a new user namespace (PrivateUsers=) to a chrooted process, and
# systemd's sandboxing (PrivateDevices=, ProtectSystem=, ...) binds the namespace's root, which must be this one.
cd "$R"
pivot_root . .
umount -l .
exec /usr/bin/env -i container=bcd-test PATH=${MACHINE_PATH} /lib/systemd/systemd --system --unit=bcd-test.target
`;

// Runs on the host: a fresh child cgroup in every hierarchy (cpuset needs its cpus and mems copied), joined,
// then the namespaces; the cgroup namespace makes that child the machine's root.
const ENTER = `
set -eu
cg=$1
shift
while IFS=: read -r _ controllers where; do
  case "$controllers" in
    '') dir=/sys/fs/cgroup/unified ;;
    name=systemd) dir=/sys/fs/cgroup/systemd ;;
    *) dir=/sys/fs/cgroup/$controllers ;;
  esac
  [ -d "$dir" ] || continue
  dir=\${dir}\${where%/}/$cg
  mkdir "$dir"
  if [ "$controllers" = cpuset ]; then
    cat "$dir/../cpuset.cpus" >"$dir/cpuset.cpus"
    cat "$dir/../cpuset.mems" >"$dir/cpuset.mems"
  fi
  echo $$ >"$dir/cgroup.procs"
done </proc/self/cgroup
exec unshare -m -p -f -C --propagation private sh -c "$@"
`;

/** The cgroup directories named `cg` under every hierarchy, from the caller's /proc/self/cgroup. */
function cgroupDirs(cg: string): string[] {
  return readFileSync('/proc/self/cgroup', 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const [, controllers, where] = line.split(':');
      const hierarchy = controllers === '' ? 'unified' : controllers === 'name=systemd' ? 'systemd' : controllers!;
      return path.join('/sys/fs/cgroup', hierarchy, where!, cg);
    })
    .filter((dir) => existsSync(dir));
}

/** Removes a cgroup directory and the ones systemd left under it, deepest first (rmdir is how cgroups go). */
function removeCgroup(dir: string): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) removeCgroup(path.join(dir, entry.name));
  rmdirSync(dir);
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`the systemd machine: ${what} did not happen within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Fails loudly, never skips: this needs root (mounts, namespaces, cgroups) and systemd (scripts/check-tools.mjs). */
function requireRootAndSystemd(): void {
  if (process.getuid?.() !== 0) throw new Error('the systemd machine needs root: mounts, PID and cgroup namespaces');
  if (!existsSync('/lib/systemd/systemd')) throw new Error('systemd is not installed: apt-get install -y systemd');
}

export async function startSystemdMachine(identity: { productUuid: string; serial: string }): Promise<SystemdMachine> {
  requireRootAndSystemd();
  const cg = `bcd-machine-${randomBytes(4).toString('hex')}`;
  const base = mkdtempSync(path.join(tmpdir(), 'bcd-machine-'));
  const child: ChildProcess = spawn('sh', ['-c', ENTER, 'sh', cg, BOOT, 'sh', base, identity.productUuid, identity.serial, ...MASKED], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const cleanup = async () => {
    await exited;
    for (const dir of cgroupDirs(cg)) removeCgroup(dir);
    rmSync(base, { recursive: true, force: true });
  };
  try {
    // unshare -f forks once; its child becomes chroot, then systemd (exec all the way).
    const pid = await waitFor('systemd starting', () => {
      if (child.exitCode !== null) throw new Error(`the systemd machine did not start: ${stderr}`);
      const children = readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim();
      if (!children) return undefined;
      const first = Number(children.split(' ')[0]);
      return readFileSync(`/proc/${first}/comm`, 'utf8').trim() === 'systemd' ? first : undefined;
    });
    const exec: SystemdMachine['exec'] = (command, options = {}) =>
      run(
        'nsenter',
        [
          ...['-t', String(pid), '-m', '-p', '-r', '-w', '--', '/usr/bin/env', '-i', `PATH=${MACHINE_PATH}`],
          ...Object.entries(options.env ?? {}).map(([key, value]) => `${key}=${value}`),
          ...command,
        ],
        { env: { PATH: process.env.PATH } as unknown as NodeJS.ProcessEnv, input: options.input },
      );
    await waitFor('systemctl is-system-running', async () => {
      const state = (await exec(['systemctl', 'is-system-running'])).stdout.trim();
      if (state === 'running' || state === 'degraded') return state;
      if (child.exitCode !== null) throw new Error(`systemd exited: ${stderr}`);
      return undefined;
    });
    const stop = async () => {
      if (child.exitCode === null) {
        await exec(['systemctl', 'poweroff']).catch(() => undefined);
        const timer = setTimeout(() => process.kill(pid, 'SIGKILL'), 20_000);
        await exited;
        clearTimeout(timer);
      }
      await cleanup();
    };
    return { pid, exec, stop };
  } catch (error) {
    if (child.exitCode === null) child.kill('SIGKILL');
    await cleanup().catch(() => undefined);
    throw error;
  }
}
