import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { testDb } from '../../test/db';
import { createTestTenant } from '../../test/fixtures';
import { agentJoin, createJoinHarness, machineClaims, mintToken, type JoinHarness } from '../../test/join-harness';
import { NODE_CERT_BACKDATE_SECONDS } from '../pki/issuance/node-certificate';

let h: JoinHarness;
beforeAll(async () => {
  h = await createJoinHarness();
});
const db = () => testDb();

/** `openssl verify` of `leaf` against `ca` for the TLS `purpose` (sslclient, sslserver): its one line of output. */
const opensslVerify = (purpose: string, ca: string, leaf: string) =>
  execFileSync('openssl', ['verify', '-purpose', purpose, '-CAfile', ca, leaf]).toString().trim();

describe('the node certificate', () => {
  it('verifies with openssl against the node CA and shows exactly the profile protocol.md requires', async () => {
    const t = await createTestTenant(db());
    const result = await agentJoin(h, (await mintToken(t)).token!, machineClaims());
    const dir = mkdtempSync(path.join(tmpdir(), 'bc-cert-'));
    const pem = (b64: string) => `-----BEGIN CERTIFICATE-----\n${b64.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`;
    writeFileSync(path.join(dir, 'leaf.pem'), pem(result.answer!.certificateChain[0]!));
    writeFileSync(path.join(dir, 'ca.pem'), pem(result.answer!.certificateChain[1]!));
    const [ca, leaf] = [path.join(dir, 'ca.pem'), path.join(dir, 'leaf.pem')];
    expect(opensslVerify('sslclient', ca, leaf)).toBe(`${leaf}: OK`);
    const text = execFileSync('openssl', ['x509', '-in', leaf, '-noout', '-text']).toString();
    const nodeId = result.answer!.nodeId;
    expect(text).toContain(`URI:spiffe://test.example.com/site/${t.site.id}/node/${nodeId}`);
    expect(text).toMatch(/Subject: OU\s?=\s?bc-role:node\n/);
    expect(text).toMatch(/X509v3 Key Usage: critical\s+Digital Signature\n/);
    expect(text).toMatch(/X509v3 Extended Key Usage:\s+TLS Web Server Authentication, TLS Web Client Authentication\n/);
    expect(text).toMatch(/X509v3 Basic Constraints: critical\s+CA:FALSE/);
    expect(text).toContain('ASN1 OID: prime256v1');
    expect(text).not.toContain(t.tenantId);
    const notBefore = new Date(/Not Before: (.*)/.exec(text)![1]!);
    const notAfter = new Date(/Not After : (.*)/.exec(text)![1]!);
    // Valid from a little before the issuance (agents with clocks behind), the backdate inside the lifetime.
    expect((notAfter.getTime() - notBefore.getTime()) / 1000).toBe(86_400);
    expect(Date.now() - notBefore.getTime()).toBeGreaterThanOrEqual((NODE_CERT_BACKDATE_SECONDS - 30) * 1000);
    expect(opensslVerify('sslserver', ca, leaf)).toBe(`${leaf}: OK`);
  });
});
