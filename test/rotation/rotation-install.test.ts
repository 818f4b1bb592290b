import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBcdForTests, newMachineRoot, removeMachineRoots, run, type BcdBuild } from '../bcd-build';
import {
  newJoinToken,
  rotate,
  rotationStatusOf,
  servedCaPin,
  servedChainLength,
  startRotationDeployment,
  wellKnownOf,
  type RotationDeployment,
} from './deployment';
import { bcdEnv, heldTrustVersion, installBcdNode, installScriptFile, type FleetNode } from './fleet-agents';

// An install script pins the serving CA and both join keys. One generated before a rotation still installs and
// joins through the gateway while the rotation of all three is active (the old keys still trusted): the gateway
// sends the new serving CA certified by the old one, then the old one, after its leaf, so the script's serving CA
// pin still covers the chain; the answer verifies under the old signing pin, the seal to the old encryption key
// opens, and the trust set the answer carries lets the machine follow the rest of the rotation. Once the old keys
// are retired, that script is refused by its own serving CA pin before its token is spent. One generated after
// activation pins the new keys and joins with them.

const PINNED = ['serving-ca', 'join-signing', 'join-encryption'] as const;

let bcd: BcdBuild;
let d: RotationDeployment;
const machines: Array<FleetNode & { root: string }> = [];

beforeAll(async () => {
  bcd = await buildBcdForTests();
  d = await startRotationDeployment({ label: 'rotation_install', apiCount: 1, bcd });
}, 300_000);

afterAll(async () => {
  await Promise.all(machines.map((m) => m.stop()));
  await d?.stop();
  removeMachineRoots();
});

const configOf = (root: string) => readFileSync(path.join(root, 'etc/bcd/config.toml'), 'utf8');

/** Waits until the machine's bcd node holds a session (a row of node_sessions for it). */
async function connected(node: FleetNode) {
  await expect
    .poll(() => d.database.db.nodeSession.count({ where: { nodeId: node.nodeId } }), {
      timeout: 60_000,
      interval: 250,
      message: node.lines.join('\n'),
    })
    .toBeGreaterThan(0);
}

describe('install scripts across a rotation of the pinned keys', () => {
  it(
    'one generated before the rotation joins during the overlap; one generated after activation pins the new keys',
    { timeout: 300_000 },
    async () => {
      const before = await installScriptFile(d, bcd);
      const old = await wellKnownOf(d.apis[0]!.url);
      for (const kind of PINNED) await rotate(d, kind, 'prepare');
      for (const kind of PINNED) await rotate(d, kind, 'activate');
      const status = await rotationStatusOf(d);
      const current = Object.fromEntries(status.keys.map((k) => [k.kind, k.currentPin]));
      for (const kind of PINNED) expect(status.keys.find((k) => k.kind === kind)!.phase).toBe('active');
      await expect.poll(() => servedCaPin(d.gateways[0]!), { timeout: 30_000, interval: 500 }).toBe(current['serving-ca']);

      // The script made before: its pins are the old keys, and it installs and joins through the gateway, whose
      // chain from the new serving CA reaches the old one.
      const early = await installBcdNode(before, await newJoinToken(d));
      machines.push(early);
      const earlyConfig = configOf(early.root);
      expect(earlyConfig).toContain(`serving_ca_spki_pin = "${old.gateway.servingCaPin}"`);
      expect(earlyConfig).toContain(`join_signing_key_pin = "${old.join.signingKeyPin}"`);
      expect(earlyConfig).toContain(`join_encryption_key_pin = "${old.join.encryptionKeyPin}"`);
      expect(await heldTrustVersion(early.identityDir)).toBe(status.trustVersion);
      early.start();
      await connected(early);

      // The script made now pins the keys in use.
      const after = await installScriptFile(d, bcd);
      const late = await installBcdNode(after, await newJoinToken(d));
      machines.push(late);
      const lateConfig = configOf(late.root);
      expect(lateConfig).toContain(`serving_ca_spki_pin = "${current['serving-ca']}"`);
      expect(lateConfig).toContain(`join_signing_key_pin = "${current['join-signing']}"`);
      expect(lateConfig).toContain(`join_encryption_key_pin = "${current['join-encryption']}"`);
      late.start();
      await connected(late);

      // Once the old keys are retired, both still connect; bcd doctor of the early machine passes. The serving CA
      // retires once the gateway's new leaf has called the API (the server refuses before).
      await expect
        .poll(async () => (await rotationStatusOf(d)).keys.find((k) => k.kind === 'serving-ca')!.gatewaysOnPrevious, {
          timeout: 30_000,
          interval: 500,
        })
        .toBe(0);
      for (const kind of PINNED) await rotate(d, kind, 'retire');
      const final = (await rotationStatusOf(d)).trustVersion;
      // Without the old serving CA the gateway sends the new one alone after its leaf (within a credentials call).
      await expect.poll(() => servedChainLength(d.gateways[0]!), { timeout: 30_000, interval: 500 }).toBe(2);

      // A script made before the rotation no longer joins: its serving CA pin covers nothing the gateway sends, and
      // bcd says so before the token is sent.
      const staleToken = await newJoinToken(d);
      const stale = await run('sh', [before], { env: bcdEnv(newMachineRoot()), input: `${staleToken}\n` });
      expect(stale.code).not.toBe(0);
      expect(stale.stderr).toMatch(/no certificate the gateway sent has the key of serving_ca_spki_pin/);
      expect(await d.database.db.joinToken.findUniqueOrThrow({ where: { id: staleToken.slice(5).split('.')[0]! } })).toMatchObject({
        usesLeft: 1,
      });

      await expect
        .poll(() => Promise.all(machines.map((m) => heldTrustVersion(m.identityDir))), { timeout: 60_000, interval: 500 })
        .toEqual([final, final]);
      for (const m of machines) await m.stop();
      // bcd closes its session on SIGTERM; the next one is opened with the stored trust set alone.
      await expect
        .poll(() => d.database.db.nodeSession.count({ where: { nodeId: { in: machines.map((m) => m.nodeId) } } }), {
          timeout: 60_000,
          interval: 250,
        })
        .toBe(0);
      for (const m of machines) {
        m.start();
        await connected(m);
      }
      const doctor = await run(path.join(early.root, 'usr/local/bin/bcd'), ['doctor'], { env: bcdEnv(early.root) });
      expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
    },
  );
});
