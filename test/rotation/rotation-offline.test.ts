import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBcdForTests, run, type BcdBuild } from '../bcd-build';
import {
  newJoinToken,
  rotate,
  rotationStatusOf,
  rotationStep,
  servedCaPin,
  startRotationDeployment,
  type RotationDeployment,
} from './deployment';
import { bcdEnv, bcdNodeOf, heldTrustVersion, installBcdNode, installScriptFile, issuingCaPin, type FleetNode } from './fleet-agents';
import { probeJoin } from './probe';

// Machines that slept through a rotation (bcd, installed by the generated script). One offline from before the
// node CA's and the join-signing key's --prepare until after their --activate comes back before --retire and
// catches up: its old certificate still opens a session, the session brings the newest trust set, and it renews
// onto the new node CA. One offline through a whole serving CA rotation cannot connect (the gateway's chain is
// refused), one offline through a whole node CA rotation (retired with --force, since its certificate was still
// valid) cannot either (its certificate is refused); both come back as the operator guide says, with
// `bcd join --reset --yes` and a new token.

const CERT_TTL_SECONDS = 120;

let bcd: BcdBuild;
let d: RotationDeployment;
let script: string;
const machines: FleetNode[] = [];

beforeAll(async () => {
  bcd = await buildBcdForTests();
  d = await startRotationDeployment({
    label: 'rotation_offline',
    apiCount: 1,
    bcd,
    env: { BETTER_COMPUTE_CERT_TTL_SECONDS: String(CERT_TTL_SECONDS) },
  });
  script = await installScriptFile(d, bcd);
}, 300_000);

afterAll(async () => {
  await Promise.all(machines.map((m) => m.stop()));
  await d?.stop();
});

const sessionsOf = (node: FleetNode) => d.database.db.nodeSession.count({ where: { nodeId: node.nodeId } });
const identityText = (node: FleetNode) => readFile(path.join(node.identityDir, 'identity.json'), 'utf8');
const nodeCaPin = async () => (await rotationStatusOf(d)).keys.find((k) => k.kind === 'node-ca')!;

async function connected(node: FleetNode) {
  await expect.poll(() => sessionsOf(node), { timeout: 60_000, interval: 250, message: node.lines.join('\n') }).toBeGreaterThan(0);
}
async function disconnected(node: FleetNode) {
  await node.stop();
  await expect.poll(() => sessionsOf(node), { timeout: 60_000, interval: 250 }).toBe(0);
}

/**
 * The operator guide's way back for a machine that slept through a join-signing rotation (which these did, with
 * the serving CA's or the node CA's): a script generated after the rotation, run with a new token (it answers
 * `already joined` and writes the new pins), then `bcd join --config /etc/bcd/config.toml --reset --yes` with that
 * token (through the gateway, under the new pins), then bcd node; the machine connects again.
 */
async function rejoin(node: FleetNode & { root: string }) {
  // The same machine joins again: the token lets it reclaim its node.
  const token = await newJoinToken(d, 1, { allowReclaim: true });
  const script = await installScriptFile(d, bcd);
  const repinned = await run('sh', [script], { env: bcdEnv(node.root), input: `${token}\n` });
  expect(repinned.code, repinned.stdout + repinned.stderr).toBe(0);
  expect(repinned.stdout).toMatch(/already joined/);
  const bin = path.join(node.root, 'usr/local/bin/bcd');
  const config = path.join(node.root, 'etc/bcd/config.toml');
  const joined = await run(bin, ['join', '--config', config, '--reset', '--yes'], { env: bcdEnv(node.root), input: token });
  expect(joined.code, joined.stdout + joined.stderr).toBe(0);
  const again = await bcdNodeOf(node.root);
  machines.push(again);
  again.start();
  await connected(again);
  return again;
}

describe('machines offline during a rotation', () => {
  it('one back before --retire catches up; ones back after --retire are refused and re-join', { timeout: 600_000 }, async () => {
    const catchingUp = await installBcdNode(script, await newJoinToken(d));
    const servingSleeper = await installBcdNode(script, await newJoinToken(d));
    const nodeCaSleeper = await installBcdNode(script, await newJoinToken(d));
    machines.push(catchingUp, servingSleeper, nodeCaSleeper);
    catchingUp.start();
    nodeCaSleeper.start();
    await connected(catchingUp);
    await connected(nodeCaSleeper);

    // A whole serving CA rotation while one machine is off; the others hold each new set before the next step,
    // and the gateway serves a chain from the new CA before the old one is retired (the server refuses --retire
    // until the gateway's new leaf has called: one still on the old CA's leaf could no longer vouch for anything).
    let servingCa = '';
    for (const step of ['prepare', 'activate', 'retire'] as const) {
      const version = await rotate(d, 'serving-ca', step);
      if (step === 'prepare') servingCa = (await rotationStatusOf(d)).keys.find((k) => k.kind === 'serving-ca')!.otherPin!;
      if (step === 'activate') {
        await expect.poll(() => servedCaPin(d.gateways[0]!), { timeout: 30_000, interval: 500 }).toBe(servingCa);
        // The server's own check before --retire: the gateway's new leaf has called the API.
        await expect
          .poll(async () => (await rotationStatusOf(d)).keys.find((k) => k.kind === 'serving-ca')!.gatewaysOnPrevious, {
            timeout: 30_000,
            interval: 500,
          })
          .toBe(0);
      }
      await expect
        .poll(() => Promise.all([catchingUp, nodeCaSleeper].map((m) => heldTrustVersion(m.identityDir))), {
          timeout: 60_000,
          interval: 250,
          message: [...catchingUp.lines, ...nodeCaSleeper.lines].join('\n'),
        })
        .toEqual([version, version]);
    }
    expect((await rotationStatusOf(d)).keys.find((k) => k.kind === 'serving-ca')!.currentPin).toBe(servingCa);

    // Both running machines go off right after a renewal, so their certificates outlive what follows.
    for (const m of [catchingUp, nodeCaSleeper]) {
      const held = await identityText(m);
      await expect.poll(() => identityText(m), { timeout: CERT_TTL_SECONDS * 1000, interval: 500 }).not.toBe(held);
      await disconnected(m);
    }
    const oldNodeCa = (await nodeCaPin()).currentPin;
    expect(await issuingCaPin(catchingUp.identityDir)).toBe(oldNodeCa);
    for (const kind of ['node-ca', 'join-signing'] as const) await rotate(d, kind, 'prepare');
    for (const kind of ['node-ca', 'join-signing'] as const) await rotate(d, kind, 'activate');
    const newNodeCa = (await nodeCaPin()).currentPin;
    expect(newNodeCa).not.toBe(oldNodeCa);
    await expect.poll(async () => (await probeJoin(d, 0)).nodeCaPin, { timeout: 30_000, interval: 500 }).toBe(newNodeCa);
    const activeVersion = (await rotationStatusOf(d)).trustVersion;

    // Back before --retire: the old certificate opens a session, the set arrives, the next renewal is from the new CA.
    catchingUp.start();
    await connected(catchingUp);
    await expect.poll(() => heldTrustVersion(catchingUp.identityDir), { timeout: 60_000, interval: 250 }).toBe(activeVersion);
    await expect.poll(() => issuingCaPin(catchingUp.identityDir), { timeout: CERT_TTL_SECONDS * 1000, interval: 500 }).toBe(newNodeCa);

    // The sleeper's certificate of the old CA is still valid: retiring is refused, then forced with a reason.
    const refused = await rotationStep(d, 'node-ca', 'retire');
    expect(refused.body.code).toBe('INVALID_STATE');
    expect((await rotationStep(d, 'node-ca', 'retire', { force: true, reason: 'a machine slept through the rotation' })).status).toBe(200);
    await rotate(d, 'join-signing', 'retire');
    const final = (await rotationStatusOf(d)).trustVersion;
    await expect.poll(() => heldTrustVersion(catchingUp.identityDir), { timeout: 60_000, interval: 250 }).toBe(final);
    expect(catchingUp.running()).toBe(true);
    expect(catchingUp.lines.filter((line) => /could not open the session|renewal failed|refused/.test(line))).toEqual([]);

    // Back after --retire: the node CA sleeper's certificate is refused, the serving CA sleeper refuses the chain.
    // (The forced retirement revoked the node CA sleeper's certificate: refused even by a gateway that has not yet
    // fetched the credentials without the old CA, which this start can beat.)
    for (const sleeper of [nodeCaSleeper, servingSleeper]) {
      const from = sleeper.lines.length;
      sleeper.start();
      await expect
        .poll(() => sleeper.lines.slice(from).some((line) => /could not open the session|refused|expired/.test(line)), {
          timeout: 60_000,
          interval: 250,
          message: sleeper.lines.join('\n'),
        })
        .toBe(true);
      expect(await sessionsOf(sleeper)).toBe(0);
      await sleeper.stop();
    }
    const doctor = await run(path.join(servingSleeper.root, 'usr/local/bin/bcd'), ['doctor'], { env: bcdEnv(servingSleeper.root) });
    expect(doctor.code).not.toBe(0);
    expect(doctor.stdout).toMatch(/FAIL +gateway .*serving CA/);

    for (const sleeper of [nodeCaSleeper, servingSleeper]) {
      const back = await rejoin(sleeper);
      expect(await heldTrustVersion(back.identityDir)).toBe(final);
      expect(await issuingCaPin(back.identityDir)).toBe(newNodeCa);
      expect(back.nodeId).toBe(sleeper.nodeId);
    }
  });
});
