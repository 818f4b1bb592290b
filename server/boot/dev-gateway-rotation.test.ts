import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { X509Certificate } from 'node:crypto';
import { createRotatingPki } from '../../test/rotation-pki';
import type { Db } from '../db/client';
import { gatewayFilesIn, readGatewayFiles } from '../gateway/files';
import { certificatesOf } from '../gateway/peer';
import { ensureDevGatewayCredentials } from './dev-gateway';

// `npm start` issues the development gateway's certificate at start: from the serving CA in use (after an
// activation, the new one), with every trusted node CA beside it.

const rotating = createRotatingPki('dev.example.com');
// The runtime names the serving CA in use, so the stored bundle is never opened.
const noDatabase = {} as Db;
let dataDir: string;
afterAll(() => rm(dataDir, { recursive: true, force: true }));

const issuedBy = (chainPem: string, caPem: string) => new X509Certificate(chainPem).verify(new X509Certificate(caPem).publicKey);
const nodeCasIn = (pem: string) => certificatesOf(pem).map((c) => c.raw.toString('base64'));

describe('ensureDevGatewayCredentials', () => {
  it('issues from the serving CA in use, and trusts every trusted node CA', async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'bc-dev-gw-'));
    rotating.phase = 'prepared';
    const dir = await ensureDevGatewayCredentials(noDatabase, 'unused', dataDir, rotating.pki.load);
    const before = await readGatewayFiles(gatewayFilesIn(dir));
    expect(issuedBy(before.servingChainPem, rotating.old.servingCa.certificatePem)).toBe(true);
    expect(nodeCasIn(before.nodeCaPem)).toEqual([rotating.oldCrypto.nodeCaCertificate, rotating.nextCrypto.nodeCaCertificate]);

    rotating.phase = 'activated';
    await ensureDevGatewayCredentials(noDatabase, 'unused', dataDir, rotating.pki.load);
    const activated = await readGatewayFiles(gatewayFilesIn(dir));
    expect(issuedBy(activated.servingChainPem, rotating.next.servingCa.certificatePem)).toBe(true);
    expect(new X509Certificate(activated.servingChainPem).subjectAltName).toBe('DNS:localhost, IP Address:127.0.0.1');
    // After the leaf, the new serving CA certified by the old one, then the old one.
    const [activatedLeaf, ...activatedCas] = certificatesOf(activated.servingChainPem).map((c) => c.raw.toString('base64'));
    expect(activatedCas).toEqual(rotating.runtime().servingCaChain!.map((pem) => new X509Certificate(pem).raw.toString('base64')));

    // Retiring keeps the current leaf, sends the new serving CA alone after it and drops the old node CA.
    rotating.phase = 'retired';
    await ensureDevGatewayCredentials(noDatabase, 'unused', dataDir, rotating.pki.load);
    const retired = await readGatewayFiles(gatewayFilesIn(dir));
    expect(certificatesOf(retired.servingChainPem).map((c) => c.raw.toString('base64'))).toEqual([
      activatedLeaf,
      new X509Certificate(rotating.next.servingCa.certificatePem).raw.toString('base64'),
    ]);
    expect(retired.servingKeyPem).toBe(activated.servingKeyPem);
    expect(nodeCasIn(retired.nodeCaPem)).toEqual([rotating.nextCrypto.nodeCaCertificate]);
  });
});
