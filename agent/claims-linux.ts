import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { access, readdir, readFile } from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  CLAIM_LIMITS,
  UNPRINTABLE_CLAIM,
  isPermanentGlobalMac,
  normalizeGpuUuid,
  normalizeMac,
  type HardwareClaims,
} from '../protocol/hardware-claims';

const run = promisify(execFile);
const NVIDIA_SMI_DIRS = ['usr/bin', 'usr/local/bin', 'bin', 'usr/local/nvidia/bin'];

/** Reads a sysfs-style value: trimmed, or undefined when unreadable, blank, too long or not printable. */
async function readValue(file: string, max: number = CLAIM_LIMITS.serial): Promise<string | undefined> {
  try {
    const value = (await readFile(file, 'utf8')).replaceAll('\u0000', '').trim();
    return value.length > 0 && value.length <= max && !UNPRINTABLE_CLAIM.test(value) ? value : undefined;
  } catch {
    return undefined; // product_serial and friends are root-only; an unreadable value is simply not claimed
  }
}

async function exists(file: string, mode = constants.F_OK): Promise<boolean> {
  return access(file, mode).then(
    () => true,
    () => false,
  );
}

/**
 * The permanent MAC of one interface, or undefined. Only physical NICs count (`device` exists). A
 * permanent address the kernel exposes (`bonding_slave/perm_hwaddr` for a bonded port, `perm_addr` where a
 * driver provides it) wins over `address`, which is used only when `addr_assign_type` is 0 (permanent).
 */
async function permanentMac(netDir: string): Promise<string | undefined> {
  if (!(await exists(path.join(netDir, 'device')))) return undefined;
  const candidates = [await readValue(path.join(netDir, 'bonding_slave/perm_hwaddr')), await readValue(path.join(netDir, 'perm_addr'))];
  if ((await readValue(path.join(netDir, 'addr_assign_type'))) === '0') candidates.push(await readValue(path.join(netDir, 'address')));
  const mac = candidates.find((candidate) => candidate !== undefined && isPermanentGlobalMac(candidate));
  return mac === undefined ? undefined : (normalizeMac(mac) ?? undefined);
}

async function readMacs(root: string): Promise<string[]> {
  const netRoot = path.join(root, 'sys/class/net');
  const names = await readdir(netRoot).catch(() => [] as string[]);
  const macs = await Promise.all(names.sort().map((name) => permanentMac(path.join(netRoot, name))));
  return [...new Set(macs.filter((mac): mac is string => mac !== undefined))].slice(0, CLAIM_LIMITS.macs);
}

/** GPU UUIDs from `nvidia-smi`, when the binary exists; any failure means no GPUs are claimed. */
async function readGpuUuids(root: string): Promise<string[]> {
  const dirs = NVIDIA_SMI_DIRS.map((dir) => path.join(root, dir));
  if (path.resolve(root) === '/') dirs.push(...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean));
  for (const dir of dirs) {
    const binary = path.join(dir, 'nvidia-smi');
    if (!(await exists(binary, constants.X_OK))) continue;
    try {
      const { stdout } = await run(binary, ['--query-gpu=uuid', '--format=csv,noheader'], { timeout: 10_000, maxBuffer: 1 << 16 });
      const uuids = stdout
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => normalizeGpuUuid(line) !== null);
      return [...new Set(uuids)].slice(0, CLAIM_LIMITS.gpuUuids);
    } catch {
      return [];
    }
  }
  return [];
}

async function readHostname(root: string): Promise<string | undefined> {
  if (path.resolve(root) === '/') return osHostname() || undefined;
  return (
    (await readValue(path.join(root, 'proc/sys/kernel/hostname'), CLAIM_LIMITS.hostname)) ??
    (await readValue(path.join(root, 'etc/hostname'), CLAIM_LIMITS.hostname))
  );
}

/**
 * Reads this machine's hardware claims on Linux: the DMI product UUID, product, board and chassis
 * serials, vendor (`sys_vendor`) and model (`product_name`) (`/sys/class/dmi/id`), the permanent, globally administered MACs of physical NICs, GPU UUIDs
 * from `nvidia-smi` when it is installed, and the hostname. Values are sent as read (trimmed); JoinService
 * normalizes them and drops placeholders. Anything unreadable is left out rather than failing the join.
 * `root` lets tests point at a fake sysfs tree (with `proc/sys/kernel/hostname` for the hostname).
 */
export async function readLinuxClaims(root = '/'): Promise<HardwareClaims> {
  const dmi = (name: string, max?: number) => readValue(path.join(root, 'sys/class/dmi/id', name), max);
  const [productUuid, productSerial, boardSerial, chassisSerial, sysVendor, productName, macs, gpuUuids, hostname] = await Promise.all([
    dmi('product_uuid', CLAIM_LIMITS.uuid),
    dmi('product_serial'),
    dmi('board_serial'),
    dmi('chassis_serial'),
    dmi('sys_vendor', CLAIM_LIMITS.dmiText),
    dmi('product_name', CLAIM_LIMITS.dmiText),
    readMacs(root),
    readGpuUuids(root),
    readHostname(root),
  ]);
  const claims: HardwareClaims = { macs, gpuUuids };
  if (productUuid) claims.productUuid = productUuid;
  if (productSerial) claims.productSerial = productSerial;
  if (boardSerial) claims.boardSerial = boardSerial;
  if (chassisSerial) claims.chassisSerial = chassisSerial;
  if (hostname) claims.hostname = hostname;
  if (sysVendor) claims.sysVendor = sysVendor;
  if (productName) claims.productName = productName;
  return claims;
}
