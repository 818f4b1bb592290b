import { chownSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { renewPopMessage } from '../../protocol/renew-wire';
import { x509popProofMessage } from '../../protocol/x509pop-wire';
import { ConfigError, formatConfigToml, parseConfigToml, type BcdConfig } from '../bcd/config-toml';
import { certificateVerifyContent } from '../tls13/handshake';
import { handOverIdentity } from './hand-over';
import { nodeUserCheck } from './node-user';
import { lookupSystemUser } from './users';
import { isSignableMessage } from './wire';

const csrSha256 = 'c'.repeat(64);

describe('what the helper signs', () => {
  it('is exactly the messages bcd makes, each only for its own purpose', () => {
    const tls = certificateVerifyContent('client', randomBytes(32));
    const tls384 = certificateVerifyContent('client', randomBytes(48));
    const pop = renewPopMessage(csrSha256, 'node_01k5w3mtc0e9d8a7b6c5d4e3f2', 1_765_000_000);
    const x509pop = x509popProofMessage(randomBytes(32).toString('base64url'), csrSha256);
    expect([isSignableMessage('tls', tls), isSignableMessage('tls', tls384)]).toEqual([true, true]);
    expect(isSignableMessage('renew-pop', pop)).toBe(true);
    expect(isSignableMessage('x509pop', x509pop)).toBe(true);
    // A server's CertificateVerify, a message for another purpose, a truncated or extended one: all refused.
    expect(isSignableMessage('tls', certificateVerifyContent('server', randomBytes(32)))).toBe(false);
    expect(isSignableMessage('tls', pop)).toBe(false);
    expect(isSignableMessage('renew-pop', x509pop)).toBe(false);
    expect(isSignableMessage('x509pop', pop)).toBe(false);
    expect(isSignableMessage('tls', tls.subarray(0, tls.length - 1))).toBe(false);
    expect(isSignableMessage('renew-pop', Buffer.concat([pop, Buffer.from('\nmore')]))).toBe(false);
    expect(isSignableMessage('renew-pop', Buffer.concat([pop.subarray(0, 10), Buffer.from([0xff]), pop.subarray(11)]))).toBe(false);
  });
});

const base = {
  gatewayUrl: 'https://gw.example.com',
  site: 'site_1',
  servingCaSpkiPin: `sha256/${'A'.repeat(43)}=`,
  joinSigningKeyPin: `sha256/${'B'.repeat(43)}=`,
  joinEncryptionKeyPin: `sha256/${'C'.repeat(43)}=`,
} satisfies BcdConfig;

describe('config.toml [helper]', () => {
  it('round-trips, defaults a missing key, and refuses root, a relative socket and unknown keys', () => {
    const config = { ...base, helper: { user: 'bcd', socket: '/run/bcd-helper/helper.sock' } };
    expect(parseConfigToml(formatConfigToml(config))).toEqual(config);
    expect(parseConfigToml(formatConfigToml(base))).toEqual(base);
    expect(parseConfigToml(`${formatConfigToml(base)}[helper]\nuser = "svc-bcd"\n`).helper).toEqual({
      user: 'svc-bcd',
      socket: '/run/bcd-helper/helper.sock',
    });
    for (const table of ['user = "root"', 'socket = "run/helper.sock"', 'group = "bcd"', 'user = "a b"', 'user = "x"\nuser = "y"'])
      expect(() => parseConfigToml(`${formatConfigToml(base)}[helper]\n${table}\n`)).toThrow(ConfigError);
    expect(() => parseConfigToml(`${formatConfigToml(base)}[helper]\n[helper]\n`)).toThrow(ConfigError);
    expect(() => parseConfigToml(`${formatConfigToml(base)}[other]\n`)).toThrow(ConfigError);
  });
});

describe('bcd node as root', () => {
  const io = () => {
    const err: string[] = [];
    return { err, io: { out: () => {}, err: (line: string) => err.push(line) } };
  };
  it('is refused under [helper], warned about without it, and an unprivileged node goes on quietly', () => {
    const refused = io();
    expect(nodeUserCheck({ ...base, helper: { user: 'bcd', socket: '/run/x.sock' } }, refused.io, 0)).toBe(2);
    expect(refused.err.join('\n')).toContain('refusing to run as root under [helper]: run it as bcd');
    const warned = io();
    expect(nodeUserCheck(base, warned.io, 0)).toBeNull();
    expect(warned.err.join('\n')).toContain('warning: running as root');
    const quiet = io();
    expect(nodeUserCheck({ ...base, helper: { user: 'bcd', socket: '/run/x.sock' } }, quiet.io, 990)).toBeNull();
    expect(quiet.err).toEqual([]);
  });
});

describe('handing the identity to the [helper] user', () => {
  it('chowns the directory and its files, and follows no link out of it', async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'bcd-handover-'));
    try {
      const dir = path.join(root, 'var/lib/bcd');
      mkdirSync(dir, { recursive: true });
      for (const name of ['identity.json', 'node.key', 'ak.key']) writeFileSync(path.join(dir, name), 'x', { mode: 0o600 });
      const outside = path.join(root, 'outside');
      writeFileSync(outside, 'root only');
      chownSync(outside, 0, 0);
      symlinkSync(outside, path.join(dir, 'trust.json'));
      const user = (await lookupSystemUser('nobody'))!;
      await handOverIdentity(dir, user);
      for (const name of ['', 'identity.json', 'node.key', 'ak.key']) expect(statSync(path.join(dir, name)).uid).toBe(user.uid);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(statSync(outside).uid).toBe(0);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('finds users in /etc/passwd and says null for a missing one', async () => {
    expect(await lookupSystemUser('root')).toEqual({ name: 'root', uid: 0, gid: 0 });
    expect(await lookupSystemUser(`no-such-user-${randomBytes(4).toString('hex')}`)).toBeNull();
  });
});
