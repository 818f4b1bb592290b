import { mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateNodeKeyAndCsr } from './keys';
import { writeIdentity, type NodeIdentity } from './identity-store';

const identity = (nodeId = 'node_1'): NodeIdentity => ({
  privateKeyPem: generateNodeKeyAndCsr().privateKeyPem,
  certificateChain: ['AAAA', 'BBBB'],
  nodeId,
  siteId: 'site_1',
  trustDomain: 'compute.example.com',
  role: 'node',
});
const newDir = () => path.join(mkdtempSync(path.join(tmpdir(), 'identity-')), 'bcd');

describe('writeIdentity', () => {
  it('makes an existing identity directory 0700', async () => {
    const dir = newDir();
    mkdirSync(dir, { mode: 0o755 });
    expect(statSync(dir).mode & 0o777).not.toBe(0o700);
    await writeIdentity(dir, identity());
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('writes node.key and identity.json with mode 0600 and no stray files', async () => {
    const dir = newDir();
    const written = identity();
    await writeIdentity(dir, written);
    expect(readdirSync(dir).sort()).toEqual(['identity.json', 'node.key']);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const file of ['identity.json', 'node.key']) expect(statSync(path.join(dir, file)).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(dir, 'node.key'), 'utf8')).toBe(written.privateKeyPem);
    expect(readFileSync(path.join(dir, 'node.key'), 'utf8')).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(JSON.parse(readFileSync(path.join(dir, 'identity.json'), 'utf8'))).toEqual({
      version: 1,
      nodeId: 'node_1',
      siteId: 'site_1',
      trustDomain: 'compute.example.com',
      role: 'node',
      certificateChain: ['AAAA', 'BBBB'],
    });
  });

  it('refuses to overwrite an identity unless reset, and then keeps the old files', async () => {
    const dir = newDir();
    await writeIdentity(dir, identity('node_1'));
    await expect(writeIdentity(dir, identity('node_2'))).rejects.toThrow(/already exists/);
    expect(JSON.parse(readFileSync(path.join(dir, 'identity.json'), 'utf8')).nodeId).toBe('node_1');
    await writeIdentity(dir, identity('node_2'), { reset: true, now: new Date('2026-01-02T03:04:05.678Z') });
    expect(JSON.parse(readFileSync(path.join(dir, 'identity.json'), 'utf8')).nodeId).toBe('node_2');
    expect(readdirSync(dir).sort()).toEqual([
      'identity.json',
      'identity.json.reset-20260102T030405Z',
      'node.key',
      'node.key.reset-20260102T030405Z',
    ]);
  });

  it('on reset moves the *.previous pair a renewal keeps aside too, and never renames over an earlier reset', async () => {
    const dir = newDir();
    await writeIdentity(dir, identity('node_1'));
    for (const name of ['identity.json', 'node.key']) writeFileSync(path.join(dir, `${name}.previous`), `old ${name}`, { mode: 0o600 });
    const now = new Date('2026-01-02T03:04:05.678Z');
    await writeIdentity(dir, identity('node_2'), { reset: true, now });
    expect(readdirSync(dir).sort()).toEqual([
      'identity.json',
      'identity.json.previous.reset-20260102T030405Z',
      'identity.json.reset-20260102T030405Z',
      'node.key',
      'node.key.previous.reset-20260102T030405Z',
      'node.key.reset-20260102T030405Z',
    ]);
    expect(readFileSync(path.join(dir, 'node.key.previous.reset-20260102T030405Z'), 'utf8')).toBe('old node.key');
    // A second reset in the same second keeps both generations of moved files.
    await writeIdentity(dir, identity('node_3'), { reset: true, now });
    expect(JSON.parse(readFileSync(path.join(dir, 'identity.json.reset-20260102T030405Z'), 'utf8')).nodeId).toBe('node_1');
    expect(JSON.parse(readFileSync(path.join(dir, 'identity.json.reset-20260102T030405Z-1'), 'utf8')).nodeId).toBe('node_2');
  });

  it('lets only one of two racing writers win', async () => {
    const dir = newDir();
    const [a, b] = [identity('node_a'), identity('node_b')];
    const results = await Promise.allSettled([writeIdentity(dir, a), writeIdentity(dir, b)]);
    expect(results.map((result) => result.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(readdirSync(dir).sort()).toEqual(['identity.json', 'node.key']);
    const winner = JSON.parse(readFileSync(path.join(dir, 'identity.json'), 'utf8')).nodeId;
    const expected = results[0].status === 'fulfilled' ? a : b;
    expect(winner).toBe(expected.nodeId);
    expect(readFileSync(path.join(dir, 'node.key'), 'utf8')).toBe(expected.privateKeyPem);
  });

  it('treats a node.key without identity.json as an identity', async () => {
    const dir = newDir();
    await writeIdentity(dir, identity());
    unlinkSync(path.join(dir, 'identity.json'));
    await expect(writeIdentity(dir, identity('node_3'))).rejects.toThrow(/already exists/);
    await writeIdentity(dir, identity('node_3'), { reset: true });
    expect(JSON.parse(readFileSync(path.join(dir, 'identity.json'), 'utf8')).nodeId).toBe('node_3');
  });
});
