import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { loadIdentity } from '../../agent/renew/identity';
import { doctorChecks, runRenewalLoop } from '../../agent/renew/loop';
import { buildRenewBody } from '../../agent/renew/renew';
import { generateNodeKeyAndCsr } from '../../agent/keys';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { mintToken } from '../../test/join-harness';
import { BASE, joinThroughGateway } from '../../test/renew-harness';
import { r, useRenewHarness } from '../../test/renew-file';

const run = promisify(execFile);
useRenewHarness();

/** One renewal loop run of `dir`, started while a process is down; `restart()` brings it back 1.2 s later. */
async function renewAcrossRestart(dir: string, restart: () => Promise<void>) {
  const lines: string[] = [];
  const loop = runRenewalLoop({ identityDir: dir, ...r.target, once: true, log: (l) => lines.push(l) });
  await new Promise((resolve) => setTimeout(resolve, 1200));
  await restart();
  return { code: await loop, lines };
}

const serials = (nodeId: string) => testDb().nodeCert.findMany({ where: { nodeId }, orderBy: { createdAt: 'asc' } });

describe('renewal through the gateway with real mutual TLS', () => {
  it('joins, renews, and renews again with the renewed identity; each certificate is a node_certs row', async () => {
    const t = await createTestTenant(testDb());
    const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
    const first = await loadIdentity(dir);
    const lines: string[] = [];
    expect(await runRenewalLoop({ identityDir: dir, ...r.target, once: true, log: (l) => lines.push(l) })).toBe(0);
    const second = await loadIdentity(dir);
    expect(second.leaf.serialNumber).not.toBe(first.leaf.serialNumber);
    expect(second.spiffeId).toBe(`spiffe://test.example.com/site/${t.site.id}/node/${answer.nodeId}`);
    // The previous identity is kept beside the new one.
    expect(await readFile(path.join(dir, 'identity.json.previous'), 'utf8')).toContain(first.identity.certificateChain[0]);

    expect(await runRenewalLoop({ identityDir: dir, ...r.target, once: true, log: (l) => lines.push(l) })).toBe(0);
    const third = await loadIdentity(dir);
    expect(third.leaf.verify(new X509Certificate(r.h.bundle.nodeCa.certificatePem).publicKey)).toBe(true);
    const rows = await serials(answer.nodeId);
    expect(rows).toHaveLength(3);
    expect(Buffer.from(rows[2]!.der).equals(third.leaf.raw)).toBe(true);
    expect(rows.every((row) => row.identityGeneration === 1 && row.role === 'node')).toBe(true);
    // The gateway logged each call with the peer's SPIFFE ID, never a body.
    const renewLines = r.gatewayLines.map((l) => JSON.parse(l)).filter((l) => l.path === `${BASE}/v1/renew` && l.peer === second.spiffeId);
    expect(renewLines).toEqual([expect.objectContaining({ status: 200 }), expect.objectContaining({ status: 200 })]);
    expect(renewLines.every((l) => typeof l.ms === 'number')).toBe(true);
    expect(r.gatewayLines.join('\n')).not.toContain('popSig');
  });

  it('renews with curl --cert --key --cacert and answers the signed envelope', async () => {
    const t = await createTestTenant(testDb());
    const { dir } = await joinThroughGateway(r, (await mintToken(t)).token!);
    const current = await loadIdentity(dir);
    const next = generateNodeKeyAndCsr();
    const body = buildRenewBody(current, next.csrDer, next.csrSha256, Math.floor(Date.now() / 1000));
    const certFile = path.join(dir, 'leaf.pem');
    const caFile = path.join(dir, 'serving-ca.pem');
    const bodyFile = path.join(dir, 'body.json');
    await writeFile(certFile, current.leaf.toString());
    await writeFile(caFile, r.h.bundle.servingCa.certificatePem);
    await writeFile(bodyFile, body);
    // The renewal as curl sends it: the leaf and its key for mutual TLS, the body from its file.
    const curlRenew = () =>
      run('curl', [
        '-sS',
        '--cert',
        certFile,
        '--key',
        path.join(dir, 'node.key'),
        '--cacert',
        caFile,
        '-H',
        'content-type: application/json',
        '--data-binary',
        `@${bodyFile}`,
        '-w',
        '\n%{http_code}',
        `${r.target.gatewayUrl.replace('127.0.0.1', 'localhost')}${BASE}/v1/renew`,
      ]);
    const { stdout } = await curlRenew();
    const [answer, status] = stdout.split('\n');
    expect(status).toBe('200');
    const envelope = JSON.parse(answer!);
    const renewed = JSON.parse(Buffer.from(envelope.body, 'base64url').toString());
    expect(renewed).toMatchObject({ status: 'renewed', nodeId: current.identity.nodeId, csrSha256: next.csrSha256, role: 'node' });

    // The same body again within 120 seconds is a replay: the uniform refusal.
    const again = await curlRenew();
    expect(again.stdout).toBe('{"code":"ACCESS_DENIED","message":"Renew refused"}\n403');
  });

  it('agent doctor: the identity loads, its expiry, and the gateway presents the pinned CA', async () => {
    const t = await createTestTenant(testDb());
    const { dir } = await joinThroughGateway(r, (await mintToken(t)).token!);
    const checks = await doctorChecks({ identityDir: dir, ...r.target });
    expect(checks.map((c) => [c.name, c.ok])).toEqual([
      ['identity', true],
      ['expiry', true],
      ['gateway', true],
    ]);
    const wrongPin = await doctorChecks({ identityDir: dir, ...r.target, servingCaPin: r.h.trust.signingKeyPin });
    expect(wrongPin.find((c) => c.name === 'gateway')).toMatchObject({ ok: false, detail: expect.stringContaining('pinned servingCaPin') });
  });
});

describe('restarts', () => {
  it('the API restarted mid-run: the gateway answers a clear 503 meanwhile, and the agent recovers on its own', async () => {
    const t = await createTestTenant(testDb());
    const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
    const before = await loadIdentity(dir);
    await r.stopApi();
    const { postToGateway, chainToPem } = await import('../../agent/renew/gateway-client');
    const next = generateNodeKeyAndCsr();
    const down = await postToGateway(
      r.target,
      { keyPem: before.identity.privateKeyPem, certificatePem: chainToPem([before.identity.certificateChain[0]!]) },
      `${BASE}/v1/renew`,
      buildRenewBody(before, next.csrDer, next.csrSha256, Math.floor(Date.now() / 1000)),
    );
    expect(down.status).toBe(503);
    expect(JSON.parse(down.body.toString())).toMatchObject({ code: 'INVALID_STATE' });
    const { code, lines } = await renewAcrossRestart(dir, () => r.startApi());
    expect(code).toBe(0);
    expect(lines.some((l) => l.includes('503'))).toBe(true);
    expect((await loadIdentity(dir)).leaf.serialNumber).not.toBe(before.leaf.serialNumber);
    expect(await serials(answer.nodeId)).toHaveLength(2);
  }, 30_000);

  it('the gateway restarted mid-run: the agent retries until it is back and renews', async () => {
    const t = await createTestTenant(testDb());
    const { dir, answer } = await joinThroughGateway(r, (await mintToken(t)).token!);
    const before = await loadIdentity(dir);
    await r.stopGateway();
    const { code, lines } = await renewAcrossRestart(dir, () => r.startGateway());
    expect(code).toBe(0);
    expect(lines.some((l) => l.includes('renewal failed'))).toBe(true);
    expect((await loadIdentity(dir)).leaf.serialNumber).not.toBe(before.leaf.serialNumber);
    expect(await serials(answer.nodeId)).toHaveLength(2);
  }, 30_000);
});

describe('dev --sim --renew', () => {
  it('keeps simulated machines renewing when their certificates reach about 60% of their lifetime', async () => {
    const { keepRenewing } = await import('../../agent/sim/renew-sim');
    const { parseIdentity } = await import('../../agent/renew/identity');
    const { issueNodeCertificate } = await import('../pki/issuance/node-certificate');
    const { createHash } = await import('node:crypto');
    const t = await createTestTenant(testDb());
    const { token } = await mintToken(t, { maxUses: 3 });
    const machines = [];
    for (let i = 0; i < 3; i++) {
      const { answer } = await joinThroughGateway(r, token!);
      // A short certificate (60 s, issued 40 s ago): past 60% of its life and not yet expired.
      const key = generateNodeKeyAndCsr();
      const short = issueNodeCertificate(r.h.crypto.nodeCa, {
        publicKeySpkiDer: key.spkiDer,
        trustDomain: answer.trustDomain,
        siteId: answer.siteId,
        nodeId: answer.nodeId,
        role: 'node',
        notBefore: new Date(Date.now() - 40_000),
        ttlSeconds: 60,
      });
      await testDb().nodeCert.create({
        data: {
          serial: short.serialHex,
          nodeId: answer.nodeId,
          identityGeneration: 1,
          role: 'node',
          spkiSha256: new Uint8Array(createHash('sha256').update(key.spkiDer).digest()),
          der: new Uint8Array(short.der),
          notBefore: short.notBefore,
          notAfter: short.notAfter,
        },
      });
      machines.push(
        parseIdentity(key.privateKeyPem, { ...answer, certificateChain: [short.der.toString('base64'), answer.certificateChain[1]!] }),
      );
    }
    const controller = new AbortController();
    const stats = await keepRenewing({
      machines,
      target: r.target,
      signal: controller.signal,
      onEvent: (_e, _m, s) => s.renewed === 3 && controller.abort(),
    });
    expect(stats).toEqual({ renewed: 3, refused: 0, failed: 0 });
  }, 60_000);
});
