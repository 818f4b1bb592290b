import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { generateKeyPairSync, sign, X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fixturePki } from '../../test/pki/fixtures';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import { issueNodeCertificate } from '../../server/pki/issuance/node-certificate';
import { spkiPin } from '../../protocol/pins';
import { checkGatewayChainDer } from '../renew/gateway-client';
import { connectTls13, type Tls13Socket } from './client';
import { SCHEME } from './handshake';

// OpenSSL's own TLS 1.3 server, an implementation independent of Node's wrapper, whose interactive commands
// send a KeyUpdate ("K" asks the peer to update too) and which requires a client certificate.
const { bundle, joinCrypto } = fixturePki();
const gateway = issueGatewayCertificate(bundle, { sans: ['127.0.0.1'] });
const servingCaPin = spkiPin(new X509Certificate(bundle.servingCa.certificatePem).publicKey);
const dir = mkdtempSync(path.join(tmpdir(), 'bc-tls13-'));
const children: ChildProcessWithoutNullStreams[] = [];

afterAll(() => {
  children.forEach((child) => child.kill());
  rmSync(dir, { recursive: true, force: true });
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });

async function startOpensslServer(): Promise<{ port: number; child: ChildProcessWithoutNullStreams; output: () => string }> {
  writeFileSync(path.join(dir, 'chain.pem'), gateway.certificatePem);
  writeFileSync(path.join(dir, 'serving-ca.pem'), bundle.servingCa.certificatePem);
  writeFileSync(path.join(dir, 'key.pem'), gateway.privateKeyPem, { mode: 0o600 });
  writeFileSync(path.join(dir, 'ca.pem'), bundle.nodeCa.certificatePem);
  const port = await freePort();
  const child = spawn('openssl', [
    's_server',
    '-tls1_3',
    '-accept',
    `127.0.0.1:${port}`,
    '-cert',
    path.join(dir, 'chain.pem'),
    '-cert_chain',
    path.join(dir, 'serving-ca.pem'),
    '-key',
    path.join(dir, 'key.pem'),
    '-CAfile',
    path.join(dir, 'ca.pem'),
    '-Verify',
    '1',
    '-naccept',
    '1',
  ]);
  children.push(child);
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  await until(
    () => output.includes('ACCEPT'),
    () => output,
  );
  return { port, child, output: () => output };
}

async function until(condition: () => boolean, what: () => string) {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((r) => setTimeout(r, 50));
  if (!condition()) throw new Error(`timed out; output so far:\n${what()}`);
}

describe('the TLS 1.3 client against openssl s_server', () => {
  it('follows a KeyUpdate that requests one, in both directions, with a client certificate', async () => {
    const server = await startOpensslServer();
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const leaf = issueNodeCertificate(joinCrypto.nodeCa, {
      publicKeySpkiDer: publicKey.export({ type: 'spki', format: 'der' }),
      trustDomain: 'compute.example.com',
      siteId: 'site-1',
      nodeId: 'node-k',
      role: 'node',
      notBefore: new Date(),
      ttlSeconds: 3600,
    });
    const socket: Tls13Socket = await connectTls13({
      host: '127.0.0.1',
      port: server.port,
      signer: { certificateChain: [leaf.der], scheme: SCHEME.ecdsaSecp256r1Sha256, sign: async (c) => sign('sha256', c, privateKey) },
      verifyServerChain: (chain) => void checkGatewayChainDer(chain, servingCaPin, '127.0.0.1'),
    });
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
    socket.write('before\n');
    await until(() => server.output().includes('before'), server.output);
    // "K": a KeyUpdate with update_requested, then data under the server's next keys.
    server.child.stdin.write('K\n');
    await until(() => server.output().includes('SSL_do_handshake -> 1'), server.output);
    server.child.stdin.write('after the update\n');
    await until(
      () => received.includes('after the update'),
      () => `${received}\n${server.output()}`,
    );
    // Our answer moved our keys on too: the server still reads what we send.
    socket.write('ours after the update\n');
    await until(() => server.output().includes('ours after the update'), server.output);
    expect(server.output()).toMatch(/CIPHER is TLS_AES_128_GCM_SHA256[\s\S]*before[\s\S]*ours after the update/);
    socket.end();
    await until(() => server.output().includes('DONE') || server.child.exitCode !== null, server.output);
  });
});
