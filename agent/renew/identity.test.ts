import { copyFile, mkdtemp, readdir, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPkiBundle } from '../../server/pki/bundle/bundle';
import { joinCryptoFromBundle } from '../../server/pki/issuance/join-crypto';
import { issueNodeCertificate } from '../../server/pki/issuance/node-certificate';
import { writeIdentity, type NodeIdentity } from '../identity-store';
import { generateNodeKeyAndCsr } from '../keys';
import { loadIdentity, replaceIdentity } from './identity';

const crypto = joinCryptoFromBundle(createPkiBundle({ trustDomain: 'id.example.com' }));
function identity(): NodeIdentity {
  const keys = generateNodeKeyAndCsr();
  const cert = issueNodeCertificate(crypto.nodeCa, {
    publicKeySpkiDer: keys.spkiDer,
    trustDomain: 'id.example.com',
    siteId: 'site_1',
    nodeId: 'node_1',
    role: 'node',
    notBefore: new Date(),
    ttlSeconds: 3600,
  });
  return {
    privateKeyPem: keys.privateKeyPem,
    certificateChain: [cert.der.toString('base64'), crypto.nodeCaCertificate],
    nodeId: 'node_1',
    siteId: 'site_1',
    trustDomain: 'id.example.com',
    role: 'node',
  };
}

describe('identity replacement', () => {
  it('installs the new identity (0600) and keeps the previous one', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'bc-id-'));
    const first = identity();
    const second = identity();
    await writeIdentity(dir, first);
    await replaceIdentity(dir, second);
    const loaded = await loadIdentity(dir);
    expect(loaded.identity.certificateChain[0]).toBe(second.certificateChain[0]);
    expect(((await stat(path.join(dir, 'node.key'))).mode & 0o777).toString(8)).toBe('600');
    expect((await readdir(dir)).sort()).toEqual(['identity.json', 'identity.json.previous', 'node.key', 'node.key.previous']);
  });

  it('a crash between the two renames still loads a consistent identity', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'bc-id-'));
    await writeIdentity(dir, identity());
    await replaceIdentity(dir, identity());
    // The new key is in place but identity.json is still the old one: the key's pair is the previous record.
    await copyFile(path.join(dir, 'identity.json.previous'), path.join(dir, 'identity.json'));
    const loaded = await loadIdentity(dir);
    expect(loaded.leaf.checkPrivateKey(loaded.privateKey)).toBe(true);
  });
});
