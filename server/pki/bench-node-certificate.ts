/**
 * Micro-benchmark of issueNodeCertificate, JoinService's hot path: `npx tsx server/pki/bench-node-certificate.ts
 * [count]`. Prints certificates per second on one core, and the cost of the ECDSA signature alone for scale.
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { createPkiBundle } from './bundle';
import { joinCryptoFromBundle } from './join-crypto';
import { issueNodeCertificate } from './node-certificate';

const count = Number(process.argv[2] ?? 20_000);
const joinCrypto = joinCryptoFromBundle(createPkiBundle({ trustDomain: 'compute.example.com' }));
const keys = Array.from({ length: 256 }, () =>
  generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({ type: 'spki', format: 'der' }),
);

function issueMany(n: number): number {
  const notBefore = new Date();
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    issueNodeCertificate(joinCrypto.nodeCa, {
      publicKeySpkiDer: keys[i % keys.length]!, // an index inside keys
      trustDomain: 'compute.example.com',
      siteId: 'site_01k5w0000000000000000000aa',
      nodeId: `node_01k5w00000000000000000${String(i % 10_000).padStart(4, '0')}`,
      role: 'node',
      notBefore,
      ttlSeconds: 86_400,
    });
  }
  return Number(process.hrtime.bigint() - started) / 1e9;
}

function signMany(n: number): number {
  const tbs = Buffer.alloc(420, 1);
  const started = process.hrtime.bigint();
  for (let i = 0; i < n; i++) sign('sha256', tbs, { key: joinCrypto.nodeCa.key, dsaEncoding: 'der' });
  return Number(process.hrtime.bigint() - started) / 1e9;
}

issueMany(Math.min(2_000, count)); // warm up
const seconds = issueMany(count);
const signSeconds = signMany(count);
const perCertUs = (seconds / count) * 1e6;
const signUs = (signSeconds / count) * 1e6;
console.log(`issueNodeCertificate: ${Math.round(count / seconds)} certificates/s (${perCertUs.toFixed(1)} µs each, ${count} runs)`);
console.log(`ECDSA P-256 signature alone: ${signUs.toFixed(1)} µs; encoding and checks: ${(perCertUs - signUs).toFixed(1)} µs`);
