import net, { type AddressInfo } from 'node:net';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { issueGatewayCertificate } from '../../server/pki/issuance/gateway';
import { fixturePki } from '../../test/pki/fixtures';
import type { LoadedIdentity } from '../renew/identity';
import { runSessionLoop, sessionStartJitterMs, SESSION_START_JITTER_MS } from './loop';

// The agent's first session waits a random part of the start jitter, so agents started together do not all
// make their TLS handshake and Hello in the same second; reconnects keep their own backoff.

// The real timer, kept before a test fakes setTimeout.
const realSetTimeout = globalThis.setTimeout;
const realSleep = (ms: number) => new Promise((resolve) => realSetTimeout(resolve, ms));

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** Any key and certificate the TLS client can present: the gateway fixture's own (no handshake completes here). */
function presentableIdentity(): LoadedIdentity {
  const { bundle } = fixturePki();
  const cert = issueGatewayCertificate(bundle, { sans: ['localhost'] });
  const leafPem = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/.exec(cert.chainPem)![0];
  const leaf = new X509Certificate(leafPem);
  return {
    identity: {
      privateKeyPem: cert.privateKeyPem,
      certificateChain: [leaf.raw.toString('base64'), leaf.raw.toString('base64')],
      nodeId: 'node_test',
      siteId: 'site_test',
      trustDomain: 'test.example.com',
      role: 'node',
    },
    privateKey: createPrivateKey(cert.privateKeyPem),
    leaf,
    nodeCa: leaf,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 3_600_000),
    spiffeId: 'spiffe://test.example.com/site/site_test/node/node_test',
  };
}

describe('the first session of runSessionLoop', () => {
  it('opens after a random part of startJitterMs, not at once', async () => {
    // A TCP listener standing in for the gateway: it counts connection attempts and closes them.
    let connections = 0;
    const server = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    const port = await new Promise<number>((resolve) =>
      server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
    );
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    vi.spyOn(Math, 'random').mockReturnValue(0.5);
    const identity = presentableIdentity();
    const controller = new AbortController();
    const exit = runSessionLoop({
      identityDir: '(memory)',
      gatewayUrl: `https://127.0.0.1:${port}`,
      servingCaPin: 'sha256/AAAA',
      agentVersion: 'test',
      signal: controller.signal,
      log: () => {},
      startJitterMs: 10_000,
      store: { load: async () => identity, replace: async () => {} },
    });
    try {
      // Half the jitter (Math.random is 0.5) has not passed: no attempt yet, however long the real clock waits.
      await vi.advanceTimersByTimeAsync(4_900);
      await realSleep(300);
      expect(connections).toBe(0);
      // Past it: the first attempt connects.
      await vi.advanceTimersByTimeAsync(200);
      for (let i = 0; i < 100 && connections === 0; i++) await realSleep(50);
      expect(connections).toBeGreaterThan(0);
    } finally {
      controller.abort();
      await vi.advanceTimersByTimeAsync(60_000);
      expect(await exit).toBe(0);
      server.close();
    }
  });
});

describe('sessionStartJitterMs', () => {
  it('reads BETTER_COMPUTE_SESSION_START_JITTER_SECONDS (0 to 300), 5 s when unset, and names a bad value', () => {
    expect(SESSION_START_JITTER_MS).toBe(5_000);
    expect(sessionStartJitterMs({})).toBe(5_000);
    expect(sessionStartJitterMs({ BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: '' })).toBe(5_000);
    expect(sessionStartJitterMs({ BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: '0' })).toBe(0);
    expect(sessionStartJitterMs({ BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: '300' })).toBe(300_000);
    for (const bad of ['301', '-1', '1.5', 'five']) {
      expect(() => sessionStartJitterMs({ BETTER_COMPUTE_SESSION_START_JITTER_SECONDS: bad })).toThrow(
        `BETTER_COMPUTE_SESSION_START_JITTER_SECONDS must be a whole number from 0 to 300, not ${bad}`,
      );
    }
  });
});
