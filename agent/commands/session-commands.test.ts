import { createPrivateKey, createPublicKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { signEnvelope } from '../../protocol/envelope';
import { COMMAND_KINDS } from '../../protocol/command-wire';
import { signedBy, trustBody, trustGeneration, type TrustGeneration } from '../../test/trust-fixture';
import { DOMAIN, joinedNode, NODE, renewedAnswer, type FakeGateway } from '../../test/trust-gateway';
import { useFakeGatewayAgent } from '../../test/session-agent';
import type { TrustStore } from '../trust/store';
import { REPLAY_FILE } from './replay-store';

const old: TrustGeneration = trustGeneration(DOMAIN);
const stranger: TrustGeneration = trustGeneration(DOMAIN);
const DOCTOR = { version: 'bcd test', ok: true, checks: [{ name: 'identity', ok: true, detail: 'fine' }] };

const agent = useFakeGatewayAgent('session-commands-', old);
const { until, lines } = agent;
let counter = 0;

const command = (kind: string, fields: object = {}, by: TrustGeneration = old) => {
  const body = {
    status: 'command',
    commandId: `cmd_${(++counter).toString(16).padStart(24, '0')}`,
    nodeId: NODE,
    kind,
    args: {},
    notAfter: Math.floor(Date.now() / 1000) + 300,
    ...fields,
  };
  return { body, envelope: signEnvelope(body, createPrivateKey(by.bundle.commandCa.privateKeyPem)) };
};

/** A joined node whose trust set (version 2) holds the command-signing certificate of `old`. */
async function node() {
  await joinedNode(agent.dir, old);
  const trust = await agent.trustStore();
  trust.learnSigningKey(createPublicKey(old.signingKey));
  expect(await trust.acceptEvent(signedBy(trustBody(NODE, 2, [old]), [old]), NODE)).toBe(true);
  return { trust, g: await agent.gateway() };
}

/** The session loop with commands that run (the doctor answers {@link DOCTOR}). */
const startLoop = (g: FakeGateway, trust: TrustStore) =>
  agent.startLoop(g, trust, { commands: { doctor: async () => DOCTOR, post: { retryDelayMs: () => 10 } } });

describe('commands on a real session (an HTTP/2 gateway in the test)', () => {
  it('reports every kind in Hello, runs bcd.doctor, refuses forged commands, answers on the same connection', async () => {
    const { trust, g } = await node();
    const doctor = command('bcd.doctor');
    const forged = command('bcd.doctor', {}, stranger);
    const otherNode = command('bcd.doctor', { nodeId: 'node_other' });
    const expired = command('bcd.doctor', { notAfter: Math.floor(Date.now() / 1000) - 5 });
    const unknown = command('shell.exec');
    g.events = (hello) =>
      hello === 0
        ? [forged, otherNode, expired, unknown, doctor, doctor].map(({ envelope }) => ['command', envelope] as [string, object])
        : [];
    const loop = startLoop(g, trust);
    await until(() => g.results.length === 5, 'five results');
    expect(g.hellos[0]!.commandKinds).toEqual([...COMMAND_KINDS]);
    const results = Object.fromEntries(g.results.map((r) => [r.commandId, r.body]));
    expect(results).toEqual({
      [otherNode.body.commandId]: { status: 'rejected', output: { reason: 'other-node' } },
      [expired.body.commandId]: { status: 'rejected', output: { reason: 'expired' } },
      [unknown.body.commandId]: { status: 'rejected', output: { reason: 'unknown-kind' } },
      [doctor.body.commandId]: expect.anything(),
    });
    // The doctor command ran once; its second event was a replay (answered at once, before the result).
    const answers = g.results.filter((r) => r.commandId === doctor.body.commandId).map((r) => r.body);
    expect(answers).toHaveLength(2);
    expect(answers).toEqual(
      expect.arrayContaining([
        { status: 'succeeded', output: DOCTOR },
        { status: 'rejected', output: { reason: 'replayed' } },
      ]),
    );
    expect(g.results.every((r) => r.connection === g.helloConnections[0])).toBe(true);
    expect(lines).toContain('agent: ignored a command event: the envelope is not signed by a command-signing key of the trust set');
    await loop.stop();

    // A restarted agent (same identity directory) does not run it again.
    g.events = () => [['command', doctor.envelope]];
    const again = startLoop(g, trust);
    await until(() => g.results.length === 6, 'the answer to the replay after a restart');
    expect(g.results[5]!.body).toEqual({ status: 'rejected', output: { reason: 'replayed' } });
    expect(JSON.parse(await readFile(path.join(agent.dir, REPLAY_FILE), 'utf8')).commands).toHaveProperty(doctor.body.commandId);
    await again.stop();
  });

  it('checks a command under the bundle of a trust event that came just before it (a rotated command key)', async () => {
    const { trust, g } = await node();
    const next = trustGeneration(DOMAIN);
    const rotated = { ...trustBody(NODE, 3, [old]), commandTrustBundle: next.bundle.commandTrustBundle };
    const doctor = command('bcd.doctor', {}, next);
    g.events = (hello) =>
      hello === 0
        ? [
            ['trust', signedBy(rotated, [old])],
            ['command', doctor.envelope],
          ]
        : [];
    const loop = startLoop(g, trust);
    await until(() => g.results.length === 1, 'the result');
    expect(trust.version).toBe(3);
    expect(g.results[0]!.body).toEqual({ status: 'succeeded', output: DOCTOR });
    await loop.stop();
  });

  it('bcd.renew renews on the session, answers the new serial on that connection, then moves the session', async () => {
    const { trust, g } = await node();
    let serial = '';
    g.renew = (body) => {
      const renewed = renewedAnswer(body, old, trustBody(NODE, 2, [old]), [old]);
      serial = renewed.serialHex;
      return renewed.envelope;
    };
    const renew = command('bcd.renew');
    g.events = (hello) => (hello === 0 ? [['command', renew.envelope]] : []);
    const before = await readFile(path.join(agent.dir, 'identity.json'), 'utf8');
    const loop = startLoop(g, trust);
    await until(() => g.results.length === 1 && g.hellos.length === 2, 'the result and the moved session');
    expect(g.results[0]!.body).toEqual({ status: 'succeeded', output: { serial } });
    expect(serial).toMatch(/^[0-9a-f]+$/);
    expect(g.results[0]!.connection === g.helloConnections[0]).toBe(true);
    expect(g.helloConnections[1] === g.helloConnections[0]).toBe(false);
    // The moved session presents the new certificate.
    const peer = (g.helloConnections[1]!.socket as TLSSocket).getPeerCertificate();
    expect(peer.serialNumber.toLowerCase()).toBe(serial);
    expect(await readFile(path.join(agent.dir, 'identity.json'), 'utf8')).not.toBe(before);
    await loop.stop();
  });

  it('trust.refresh opens a new session (its Hello reports the version held) and answers {} on the old one', async () => {
    const { trust, g } = await node();
    const refresh = command('trust.refresh');
    g.events = (hello) => (hello === 0 ? [['command', refresh.envelope]] : []);
    const loop = startLoop(g, trust);
    await until(() => g.results.length === 1 && g.hellos.length === 2, 'the result and the new session');
    expect(g.results[0]!.body).toEqual({ status: 'succeeded', output: {} });
    expect(g.results[0]!.connection === g.helloConnections[0]).toBe(true);
    expect(g.hellos[1]!.trustVersion).toBe(2);
    // The old session is closed once answered.
    await until(() => g.helloConnections[0]!.closed || g.helloConnections[0]!.destroyed, 'the old connection to close');
    await loop.stop();
  });
});
