import { createPublicKey } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useFakeGatewayAgent } from '../../test/session-agent';
import { signedBy, trustBody, trustGeneration, type TrustGeneration } from '../../test/trust-fixture';
import { DOMAIN, joinedNode, NODE, renewedAnswer } from '../../test/trust-gateway';
import { joinCryptoFromBundle } from '../../server/pki/issuance/join-crypto';
import { connectGateway } from '../renew/gateway-client';
import { TRUST_FILE } from '../trust/store';

const old: TrustGeneration = trustGeneration(DOMAIN);
const next: TrustGeneration = trustGeneration(DOMAIN);
const stranger: TrustGeneration = trustGeneration(DOMAIN);

const agent = useFakeGatewayAgent('trust-session-', old);
const { gateway, until, startLoop, lines } = agent;

describe('the session loop and trust rotation', () => {
  it('applies a trust event from the gateway, ignores a forged one, then follows the new serving CA and signing key', async () => {
    await joinedNode(agent.dir, old);
    const trust = await agent.trustStore();
    const g = await gateway(old);
    // After the welcome: a set signed by a stranger, one for another node, then the real one (sig by the old key).
    g.events = (hello) =>
      hello === 0
        ? [
            ['trust', signedBy(trustBody(NODE, 7, [stranger]), [stranger])],
            ['trust', signedBy(trustBody('node_other', 7, [stranger]), [old])],
            ['trust', signedBy(trustBody(NODE, 2, [next, old]), [old, next])],
            // At once the set that drops the old keys, signed by the new key only: its key is read from join.next.
            ['trust', signedBy(trustBody(NODE, 3, [next]), [next])],
          ]
        : [];
    g.wellKnown = { join: { signingCertificate: old.signingCertificate, next: { signingCertificate: next.signingCertificate } } };
    const loop = startLoop(g, trust);
    await until(() => trust.version === 3, 'trust version 3');
    expect(g.hellos[0]!.trustVersion).toBe(0);
    expect(g.hellos[0]).not.toHaveProperty('commandKinds');
    expect(lines).toContain('agent: ignored a trust set from trust event: the envelope is not signed by a trusted join signing key');
    expect(lines).toContain(`agent: ignored a trust set from trust event: it is for another node than ${NODE}`);
    expect(lines.filter((line) => line.startsWith('agent: ignored'))).toHaveLength(2);
    expect((await stat(path.join(agent.dir, TRUST_FILE))).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(path.join(agent.dir, TRUST_FILE), 'utf8'))).toMatchObject({
      version: 3,
      servingCaPins: [next.servingCaPin],
    });

    // The serving CA and the signing key are switched: a gateway of the new CA, welcomes signed by the new key only.
    const g2 = await gateway(next);
    g2.welcomeSigners = [next];
    g2.wellKnown = {
      join: { signingCertificate: next.signingCertificate, next: { signingCertificate: old.signingCertificate } },
    };
    // Before the set, neither the chain nor such a welcome was accepted.
    await expect(connectGateway({ gatewayUrl: g2.url, servingCaPin: old.servingCaPin })).rejects.toThrow(/serving CA does not match/);
    (await connectGateway({ gatewayUrl: g2.url, servingCaPin: old.servingCaPin, trust })).destroy();
    await loop.stop();

    const moved = startLoop(g2, trust);
    const opened = lines.length;
    await until(
      () => lines.slice(opened).some((line) => line.startsWith(`agent: session sess_0 open through ${g2.url}`)),
      'a session with the new gateway',
    );
    expect(g2.hellos[0]!.trustVersion).toBe(3);
    expect(await moved.stop()).toBe(0);
  });

  it('a fresh agent of the old pins cannot open a session with a gateway of the new serving CA', async () => {
    await joinedNode(agent.dir, old);
    const trust = await agent.trustStore();
    const g = await gateway(next);
    const loop = startLoop(g, trust);
    await until(() => lines.some((line) => line.includes('could not open the session')), 'a refused connection');
    expect(g.hellos).toHaveLength(0);
    expect(lines.find((line) => line.includes('could not open the session'))).toMatch(/serving CA does not match/);
    await loop.stop();
  });

  it('renews onto a new node CA only in an answer signed by a trusted key, and stores the trust it carries', async () => {
    await joinedNode(agent.dir, old);
    const trust = await agent.trustStore();
    trust.learnSigningKey(createPublicKey(old.signingKey));
    expect(await trust.acceptEvent(signedBy(trustBody(NODE, 2, [old, next]), [old]), NODE)).toBe(true);
    const g = await gateway(old);
    g.wellKnown = { join: { signingCertificate: old.signingCertificate, next: { signingCertificate: next.signingCertificate } } };
    const crypto = joinCryptoFromBundle(next.bundle);
    let signers = [stranger];
    g.renew = (body) => renewedAnswer(body, next, trustBody(NODE, 3, [next, old]), signers).envelope;
    // Renew at once; the first answers are signed by a stranger and refused.
    let renewals = 0;
    const loop = startLoop(g, trust, { renewalDelay: () => (renewals++ === 0 ? 300 : 3_600_000) });
    await until(() => lines.some((line) => line.includes('renewal failed')), 'a refused renewal');
    expect(lines.find((line) => line.includes('renewal failed'))).toMatch(/not signed by a trusted join signing key/);
    const identityBefore = await readFile(path.join(agent.dir, 'identity.json'), 'utf8');
    signers = [next];
    await until(() => lines.some((line) => line.startsWith('agent: renewed')), 'the renewal');
    const identity = JSON.parse(await readFile(path.join(agent.dir, 'identity.json'), 'utf8'));
    expect(identity.certificateChain[1]).toBe(crypto.nodeCaCertificate);
    expect(identityBefore).not.toContain(crypto.nodeCaCertificate);
    await until(() => trust.version === 3, 'trust version 3 from the renewal answer');
    expect(JSON.parse(await readFile(path.join(agent.dir, TRUST_FILE), 'utf8')).commandTrustBundle).toEqual(
      trustBody(NODE, 3, [next, old]).commandTrustBundle,
    );
    await loop.stop();
  });
});
