import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hardwareClaimsSchema } from '../protocol/hardware-claims';
import { readLinuxClaims } from './claims-linux';

function fakeRoot(files: Record<string, string>, dirs: string[] = []): string {
  const root = mkdtempSync(path.join(tmpdir(), 'sysfs-'));
  for (const dir of dirs) mkdirSync(path.join(root, dir), { recursive: true });
  for (const [file, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), content);
  }
  return root;
}

const nic = (name: string, files: Record<string, string>, physical = true) => ({
  ...Object.fromEntries(Object.entries(files).map(([file, content]) => [`sys/class/net/${name}/${file}`, content])),
  ...(physical ? { [`sys/class/net/${name}/device/uevent`]: 'DRIVER=ixgbe\n' } : {}),
});

describe('readLinuxClaims', () => {
  it('reads DMI identifiers, permanent MACs of physical NICs, GPUs and the hostname', async () => {
    const root = fakeRoot({
      'sys/class/dmi/id/product_uuid': '4C4C4544-0031-3510-8052-B4C04F4E5632\n',
      'sys/class/dmi/id/product_serial': 'SN-7701\n',
      'sys/class/dmi/id/board_serial': 'To Be Filled By O.E.M.\n',
      'sys/class/dmi/id/chassis_serial': '\n',
      'sys/class/dmi/id/sys_vendor': 'Supermicro\n',
      'sys/class/dmi/id/product_name': 'SYS-421GE-TNRT\n',
      ...nic('eno1', { address: '3c:ec:ef:12:34:56\n', addr_assign_type: '0\n' }),
      // A bonded port shows the bond's MAC; its own permanent one is in bonding_slave/perm_hwaddr.
      ...nic('eno2', { address: '3c:ec:ef:12:34:56\n', addr_assign_type: '3\n', 'bonding_slave/perm_hwaddr': '3c:ec:ef:12:34:57\n' }),
      ...nic('eno3', { address: '3c:ec:ef:12:34:58\n', addr_assign_type: '1\n' }), // random
      ...nic('eno4', { address: '02:11:22:33:44:55\n', addr_assign_type: '3\n', perm_addr: 'A0-36-9F-00-00-01\n' }),
      ...nic('wlp1', { address: '06:11:22:33:44:55\n', addr_assign_type: '0\n' }), // locally administered
      ...nic('docker0', { address: '00:1b:21:aa:bb:cc\n', addr_assign_type: '0\n' }, false),
      ...nic('lo', { address: '00:00:00:00:00:00\n', addr_assign_type: '0\n' }, false),
      'usr/bin/nvidia-smi':
        '#!/bin/sh\necho "GPU-7D5A1C2E-0B3F-4A6D-9E8C-1F2A3B4C5D6E"\necho "GPU-00000000-1111-2222-3333-444444444444"\necho "No devices were found"\n',
      'proc/sys/kernel/hostname': 'r7-u12\n',
    });
    chmodSync(path.join(root, 'usr/bin/nvidia-smi'), 0o755);
    const claims = await readLinuxClaims(root);
    expect(claims).toEqual({
      productUuid: '4C4C4544-0031-3510-8052-B4C04F4E5632',
      productSerial: 'SN-7701',
      boardSerial: 'To Be Filled By O.E.M.',
      macs: ['3c:ec:ef:12:34:56', '3c:ec:ef:12:34:57', 'a0:36:9f:00:00:01'],
      gpuUuids: ['GPU-7D5A1C2E-0B3F-4A6D-9E8C-1F2A3B4C5D6E', 'GPU-00000000-1111-2222-3333-444444444444'],
      hostname: 'r7-u12',
      sysVendor: 'Supermicro',
      productName: 'SYS-421GE-TNRT',
    });
    expect(hardwareClaimsSchema.parse(claims)).toEqual(claims);
  });

  it('claims nothing it cannot read, and survives a failing nvidia-smi', async () => {
    const root = fakeRoot({ 'usr/local/bin/nvidia-smi': '#!/bin/sh\necho boom >&2\nexit 9\n', 'etc/hostname': 'spare\n' }, [
      'sys/class/net',
    ]);
    chmodSync(path.join(root, 'usr/local/bin/nvidia-smi'), 0o755);
    expect(await readLinuxClaims(root)).toEqual({ macs: [], gpuUuids: [], hostname: 'spare' });
    expect(await readLinuxClaims(path.join(root, 'missing'))).toEqual({ macs: [], gpuUuids: [] });
  });

  it('leaves out values the server would refuse', async () => {
    const root = fakeRoot({ 'sys/class/dmi/id/product_serial': 'x'.repeat(500), 'sys/class/dmi/id/board_serial': 'a\u0001b' });
    expect(await readLinuxClaims(root)).toEqual({ macs: [], gpuUuids: [] });
  });
});
