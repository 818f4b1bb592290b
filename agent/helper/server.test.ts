import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { connect, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeKeyTemplate } from '../tpm/templates';
import { attestationKeyTemplate } from '../tpm/templates';
import { nodeKeyHelper, requestHelper } from './client';
import { startHelperServer } from './server';
import type { HelperOps } from './tpm-ops';
import { encodeFrame, MAX_REQUEST_BYTES } from './wire';

// The helper's socket with fake TPM operations that record what reached them: every refusal below must be
// decided before an operation runs. The owner is `nobody` (65534), and a second uid is refused by the socket's
// mode; both run as real processes (setpriv), since this test runs as root.
const OWNER = { uid: 65534, gid: 65534 };
const OTHER = { uid: 65533, gid: 65533 };
let dir: string;
let socketPath: string;
let server: Server;
const reached: string[] = [];

const nodeKey = { publicArea: nodeKeyTemplate(), privateBlob: randomBytes(64) };
const wireKey = { public: nodeKey.publicArea.toString('base64'), private: nodeKey.privateBlob.toString('base64') };
const ops: HelperOps = {
  sign: async (key) => {
    reached.push(`sign ${key.publicArea.length}`);
    return { r: Buffer.alloc(32, 1), s: Buffer.alloc(32, 2) };
  },
  nextKey: async ({ akStatement }) => {
    reached.push(`next-key ${akStatement}`);
    return { key: nodeKey, csrDer: Buffer.from('3000', 'hex'), keyAttestation: null };
  },
};

const tlsContent = Buffer.concat([Buffer.alloc(64, 0x20), Buffer.from('TLS 1.3, client CertificateVerify\0'), randomBytes(32)]);
const renewPop = Buffer.from(`renew-pop\n${'ab'.repeat(32)}\nnode_01abc\n1700000000`);

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'bcd-helper-'));
  chmodSync(dir, 0o755);
  socketPath = path.join(dir, 'run/helper.sock');
  server = await startHelperServer({ socketPath, owner: OWNER, ops });
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

/** Sends raw bytes on a connection of their own and resolves with everything the helper answered. */
function raw(bytes: Buffer, options: { end?: boolean } = {}): Promise<Buffer> {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve(Buffer.concat(chunks)));
    socket.once('connect', () => (options.end ? socket.end(bytes) : socket.write(bytes)));
  });
}

const answerOf = (bytes: Buffer) => (bytes.length >= 4 ? JSON.parse(bytes.subarray(4).toString('utf8')) : null);

describe('bcd helper socket', () => {
  it('belongs to the [helper] user alone: owner and mode 0600', () => {
    const stat = statSync(socketPath);
    expect(stat.isSocket()).toBe(true);
    expect([stat.uid, stat.gid, stat.mode & 0o777]).toEqual([OWNER.uid, OWNER.gid, 0o600]);
  });

  it('refuses a socket directory that others can write', async () => {
    const shared = path.join(dir, 'shared');
    mkdirSync(shared, { mode: 0o777 });
    chmodSync(shared, 0o1777);
    await expect(startHelperServer({ socketPath: path.join(shared, 'helper.sock'), owner: OWNER, ops })).rejects.toThrow(
      /writable by no one else/,
    );
  });

  it('serves the [helper] user, and refuses a connection from another uid', () => {
    const probe = (who: { uid: number; gid: number }) =>
      spawnSync(
        'setpriv',
        [
          `--reuid=${who.uid}`,
          `--regid=${who.gid}`,
          '--clear-groups',
          process.execPath,
          '-e',
          `const s=require('net').connect(process.argv[1]);s.on('connect',()=>{console.log('connected');s.destroy()});s.on('error',e=>console.log(e.code))`,
          socketPath,
        ],
        { encoding: 'utf8' },
      ).stdout.trim();
    expect(probe(OWNER)).toBe('connected');
    expect(probe(OTHER)).toBe('EACCES');
  });

  it('signs a TLS CertificateVerify and a renewal proof, and makes the next key', async () => {
    const helper = nodeKeyHelper(socketPath);
    expect(await helper.sign(nodeKey, 'tls', tlsContent)).toEqual(Buffer.concat([Buffer.alloc(32, 1), Buffer.alloc(32, 2)]));
    expect((await helper.sign(nodeKey, 'renew-pop', renewPop)).length).toBe(64);
    reached.length = 0;
    const next = await helper.nextKey({ ak: null, akStatement: null });
    expect(next.nodeKey.publicArea.equals(nodeKey.publicArea)).toBe(true);
    expect(reached).toEqual(['next-key null']);
  });

  const v = 1;
  const refusals: Array<[string, unknown]> = [
    ['an unknown op', { v, op: 'read-key', path: '/etc/shadow' }],
    ['a raw TPM command', { v, op: 'tpm', command: 'AAAA' }],
    ['another wire version', { v: 2, op: 'sign', purpose: 'tls', key: wireKey, message: tlsContent.toString('base64') }],
    ['an unknown purpose', { v, op: 'sign', purpose: 'anything', key: wireKey, message: tlsContent.toString('base64') }],
    ['an extra field', { v, op: 'sign', purpose: 'tls', key: wireKey, message: tlsContent.toString('base64'), digest: 'AA==' }],
    ['a message of another shape', { v, op: 'sign', purpose: 'tls', key: wireKey, message: randomBytes(130).toString('base64') }],
    ['a renewal proof as a TLS message', { v, op: 'sign', purpose: 'tls', key: wireKey, message: renewPop.toString('base64') }],
    ['a TLS message as a renewal proof', { v, op: 'sign', purpose: 'renew-pop', key: wireKey, message: tlsContent.toString('base64') }],
    ['an x509pop proof of another shape', { v, op: 'sign', purpose: 'x509pop', key: wireKey, message: renewPop.toString('base64') }],
    [
      'a restricted key (the AK) to sign with',
      {
        v,
        op: 'sign',
        purpose: 'tls',
        key: { public: attestationKeyTemplate().toString('base64'), private: 'AAAA' },
        message: tlsContent.toString('base64'),
      },
    ],
    ['a key that is not base64', { v, op: 'sign', purpose: 'tls', key: { public: '!!!!', private: 'AAAA' }, message: 'AAAA' }],
    ['an oversized key', { v, op: 'sign', purpose: 'tls', key: { public: 'A'.repeat(4000), private: 'AAAA' }, message: 'AAAA' }],
    ['an AK statement without the AK', { v, op: 'next-key', akStatement: `urn:bc:tpm-ak:sha256:${'0'.repeat(64)}`, ak: null }],
    ['an AK statement of another form', { v, op: 'next-key', akStatement: 'urn:bc:other', ak: wireKey }],
    ['an array', [1, 2, 3]],
    ['null', null],
  ];

  it.each(refusals)('refuses %s before anything reaches the TPM', async (_, request) => {
    reached.length = 0;
    const answer = answerOf(await raw(encodeFrame(request)));
    expect(answer).toMatchObject({ ok: false, error: 'refused' });
    expect(reached).toEqual([]);
  });

  it('refuses bytes that are not JSON, a frame over the limit, bytes after the frame, and a short frame', async () => {
    reached.length = 0;
    const notJson = Buffer.concat([Buffer.from([0, 0, 0, 5]), Buffer.from('{{{{{')]);
    expect(answerOf(await raw(notJson))).toMatchObject({ ok: false, error: 'refused' });
    const oversized = Buffer.alloc(4);
    oversized.writeUInt32BE(MAX_REQUEST_BYTES + 1);
    expect(answerOf(await raw(Buffer.concat([oversized, Buffer.alloc(1024, 0x41)])))).toMatchObject({
      ok: false,
      message: expect.stringContaining('over the limit'),
    });
    const huge = Buffer.from([0xff, 0xff, 0xff, 0xff]);
    expect(answerOf(await raw(huge))).toMatchObject({ ok: false, error: 'refused' });
    const good = encodeFrame({ v, op: 'next-key', akStatement: null, ak: null });
    expect(answerOf(await raw(Buffer.concat([good, Buffer.from('x')])))).toMatchObject({ ok: false, error: 'refused' });
    expect(answerOf(await raw(good.subarray(0, good.length - 3), { end: true }))).toMatchObject({ ok: false, error: 'refused' });
    expect(reached).toEqual([]);
  });

  it('survives random bytes and random frames, refusing each, and still serves', async () => {
    reached.length = 0;
    for (let i = 0; i < 200; i++) {
      const body = randomBytes(1 + Math.floor(Math.random() * 300));
      const framed = i % 2 === 0;
      const bytes = framed ? Buffer.concat([Buffer.from([0, 0, body.length >> 8, body.length & 0xff]), body]) : body;
      const answer = answerOf(await raw(bytes, { end: true }));
      if (answer !== null) expect(answer).toMatchObject({ ok: false });
    }
    expect(reached).toEqual([]);
    expect(await requestHelper(socketPath, { v, op: 'next-key', akStatement: null, ak: null })).toMatchObject({ ok: true });
  });
});
