import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PKI_KEY_KINDS, type PkiKeyKind } from '../../server/pki/rotation/kinds';
import type { KeyRotationStatus } from '../../server/pki/rotation/rotation';
import { buildBcdForTests, type BcdBuild } from '../bcd-build';
import {
  newJoinToken,
  reportedTrustVersions,
  rotate,
  rotationStatusOf,
  servedCaPin,
  startRotationDeployment,
  waitUntil,
  wellKnownOf,
  type RotationDeployment,
  type RotationStepName,
} from './deployment';
import {
  failuresAfterFirstSession,
  heldTrustVersion,
  installBcdNode,
  installPinsNow,
  installScriptFile,
  issuingCaPin,
  joinAgentNode,
  type FleetNode,
} from './fleet-agents';
import { probeJoin } from './probe';

// The whole fleet through every rotation: 50 machines (5 running the built bcd as bcd.service runs it, 45 the
// CLI agent's session loop) with open sessions, two API processes and two gateways on one PostgreSQL. Each of the
// five keys goes prepared → active → retired through the REST API as a root admin, alternating the instance
// asked; after each step every instance shows the step within seconds, and the operator's condition for the next
// step is awaited (every node holds the new trust set; for the node CA's retirement, no live certificate of the
// old CA). Certificates live 60 s, so every node renews several times during the run, and onto the new node CA.
// At the end: no renewal and no session failed after the first one opened, and every node reports the newest
// trust version.

const BCD_NODES = 5;
const AGENT_NODES = 45;
const CERT_TTL_SECONDS = 60;
/** How long an instance may take to show a step: it polls the trust version every 2 s and reopens the bundle. */
const SWITCH_MS = 30_000;
/** How long a trust set may take to reach every open session, and a renewal to come round (60% of 60 s). */
const FLEET_MS = 120_000;

let bcd: BcdBuild;
let d: RotationDeployment;
const fleet: FleetNode[] = [];

beforeAll(async () => {
  bcd = await buildBcdForTests();
  d = await startRotationDeployment({
    label: 'rotation_fleet',
    bcd,
    env: { BETTER_COMPUTE_CERT_TTL_SECONDS: String(CERT_TTL_SECONDS) },
  });
  const token = await newJoinToken(d, BCD_NODES + AGENT_NODES);
  const scripts = [await installScriptFile(d, bcd, { api: 0, gateway: 0 }), await installScriptFile(d, bcd, { api: 1, gateway: 1 })];
  // Each machine starts its agent as soon as it joined: certificates live only a minute here.
  for (let i = 0; i < BCD_NODES; i++) {
    const node = await installBcdNode(scripts[i % 2]!, token);
    node.start();
    fleet.push(node);
  }
  const pins = await installPinsNow(d);
  for (let i = 0; i < AGENT_NODES; i += 5) {
    const batch = Array.from({ length: Math.min(5, AGENT_NODES - i) }, (_, j) =>
      joinAgentNode(d, { token, pins, api: (i + j) % 2, gateway: (i + j) % 2 }).then((node) => (node.start(), node)),
    );
    fleet.push(...(await Promise.all(batch)));
  }
  const connected = async () => new Set((await d.database.db.nodeSession.findMany({ select: { nodeId: true } })).map((x) => x.nodeId)).size;
  await waitUntil('every machine holds a session', async () => (await connected()) === fleet.length, FLEET_MS);
}, 600_000);

afterAll(async () => {
  await Promise.all(fleet.map((node) => node.stop()));
  await d?.stop();
});

const nodeIds = () => fleet.map((n) => n.nodeId);

/** Waits until every machine's agent holds a trust set of at least `version` (its trust.json). */
async function everyNodeHolds(version: number) {
  await expect
    .poll(
      async () => (await Promise.all(fleet.map((n) => heldTrustVersion(n.identityDir)))).filter((v) => v === null || v < version).length,
      {
        timeout: FLEET_MS,
        interval: 500,
      },
    )
    .toBe(0);
}

type Phase = 'prepared' | 'active' | 'retired';
const PHASE_OF: Record<RotationStepName, Phase> = { prepare: 'prepared', activate: 'active', retire: 'retired' };

/** What every instance must show for `kind` in `phase`: per API instance (its document) and per gateway (served chain, a join through it). */
async function observed(kind: PkiKeyKind, gateway: number): Promise<unknown> {
  const doc = await wellKnownOf(d.apis[gateway]!.url);
  const join = await probeJoin(d, gateway);
  switch (kind) {
    case 'serving-ca':
      return {
        published: [doc.gateway.servingCaPin, doc.gateway.servingCaPins ?? null],
        served: await servedCaPin(d.gateways[gateway]!),
        answered: join.trust.servingCaPins,
        version: join.trust.version,
      };
    case 'join-signing':
      return {
        published: [doc.join.signingKeyPin, doc.join.next?.signingKeyPin ?? null],
        answered: join.trust.joinSigningKeyPins,
        sigs: [...join.sigPins].sort(),
        version: join.trust.version,
      };
    case 'join-encryption':
      return {
        published: [doc.join.encryptionKeyPin, doc.join.next?.encryptionKeyPin ?? null],
        answered: join.trust.joinEncryptionKeyPins,
        version: join.trust.version,
      };
    case 'node-ca':
      return { issuedBy: join.nodeCaPin, version: join.trust.version };
    case 'command-signing':
      return { bundle: join.commandPins, version: join.trust.version };
  }
}

function expected(kind: PkiKeyKind, phase: Phase, old: string, next: string, version: number): unknown {
  const inUse = phase === 'prepared' ? old : next;
  const both = phase === 'prepared' ? [old, next] : phase === 'active' ? [next, old] : [next];
  const other = phase === 'prepared' ? next : phase === 'active' ? old : null;
  switch (kind) {
    case 'serving-ca':
      return { published: [inUse, phase === 'retired' ? null : both], served: inUse, answered: both, version };
    case 'join-signing':
      return { published: [inUse, other], answered: both, sigs: phase === 'retired' ? [] : [old, next].sort(), version };
    case 'join-encryption':
      return { published: [inUse, other], answered: both, version };
    case 'node-ca':
      return { issuedBy: inUse, version };
    case 'command-signing':
      return { bundle: both, version };
  }
}

const keyStatus = async (kind: PkiKeyKind): Promise<KeyRotationStatus> => (await rotationStatusOf(d)).keys.find((k) => k.kind === kind)!;

describe('a fleet of 50 nodes, two API instances and two gateways on one PostgreSQL', () => {
  it(
    'goes through all five rotations with no failed renewal or session, every node ending on the newest trust set',
    { timeout: 1_500_000 },
    async () => {
      let steps = 0;
      const stepLog: string[] = [];
      let version = 0;
      for (const kind of PKI_KEY_KINDS) {
        const old = (await keyStatus(kind)).currentPin;
        let next = '';
        for (const step of ['prepare', 'activate', 'retire'] as const) {
          if (kind === 'node-ca' && step === 'retire') {
            // The operator's condition: every node renewed onto the new CA, and the old CA's last certificates expired.
            await expect
              .poll(() => Promise.all(fleet.map((n) => issuingCaPin(n.identityDir))), { timeout: FLEET_MS, interval: 1000 })
              .toEqual(fleet.map(() => next));
            await expect
              .poll(async () => (await keyStatus(kind)).liveCertificatesOfPrevious, { timeout: FLEET_MS, interval: 1000 })
              .toBe(0);
          }
          if (kind === 'serving-ca' && step === 'retire') {
            // The server refuses while a gateway seen in the last minute still serves the old CA's leaf.
            await expect.poll(async () => (await keyStatus(kind)).gatewaysOnPrevious, { timeout: SWITCH_MS, interval: 500 }).toBe(0);
          }
          const before = version;
          version = await rotate(d, kind, step, steps++ % 2);
          expect(version, `${kind} ${step}`).toBeGreaterThan(before);
          if (step === 'prepare') next = (await keyStatus(kind)).otherPin!;
          const want = expected(kind, PHASE_OF[step], old, next, version);
          for (const gateway of [0, 1])
            await expect
              .poll(() => observed(kind, gateway), { timeout: SWITCH_MS, interval: 500, message: `${kind} ${step} on instance ${gateway}` })
              .toEqual(want);
          await everyNodeHolds(version);
        }
        expect(await keyStatus(kind)).toMatchObject({ phase: 'idle', currentPin: next, otherPin: null, nextStep: 'prepare' });
      }
      expect(steps).toBe(15);

      // Every node reports the newest version in its Hello (each renewal moves its session to a new Hello).
      await expect
        .poll(async () => [...(await reportedTrustVersions(d, nodeIds())).values()].filter((v) => v !== version).length, {
          timeout: FLEET_MS,
          interval: 1000,
        })
        .toBe(0);
      // Renewals happened throughout, and none failed; no session failed after the node's first one opened.
      for (const node of fleet)
        expect(await d.database.db.nodeCert.count({ where: { nodeId: node.nodeId } }), node.nodeId).toBeGreaterThan(2);
      const refusals = await d.database.db.event.findMany({
        where: { type: { in: ['security.session.refused', 'security.renew.refused'] } },
      });
      const why =
        refusals.map((e) => `${e.createdAt.toISOString()} ${e.type} ${JSON.stringify(e.data)}`).join('\n') +
        `\nsteps:\n${stepLog.join('\n')}`;
      expect(
        fleet.flatMap((n) => failuresAfterFirstSession(n).map((line) => `${n.kind} ${n.nodeId}: ${line}`)),
        why,
      ).toEqual([]);
      expect(refusals, why).toEqual([]);
      expect(fleet.filter((n) => !n.running()).map((n) => n.nodeId)).toEqual([]);
      expect(new Set((await d.database.db.nodeSession.findMany({ select: { nodeId: true } })).map((s) => s.nodeId)).size).toBe(
        fleet.length,
      );
    },
  );
});
