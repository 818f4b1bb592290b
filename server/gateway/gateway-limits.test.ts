import net from 'node:net';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnGateway, type SpawnedGateway } from '../../test/gateway-process';
import { issueGatewayCertificate } from '../pki/issuance/gateway';
import { fixturePki } from '../../test/pki/fixtures';
import { unrelayedGateway } from '../../test/local-gateway';
import type { GatewayServer } from './gateway';
import { gatewayLimitsFromEnv, GATEWAY_LIMITS } from './limits';

// Connection hygiene of the gateway process: sockets that never handshake are closed after the handshake
// timeout, no more than maxConnections sockets are open at once, and TLS 1.2 offers only ECDHE with an AEAD.

const { bundle } = fixturePki();
const cert = issueGatewayCertificate(bundle, { sans: ['localhost', '127.0.0.1'] });
const credentials = { chainPem: cert.chainPem, keyPem: cert.privateKeyPem, nodeCaPem: bundle.nodeCa.certificatePem };
// Nothing here is relayed: every call below ends at the gateway.
const apiUrl = 'http://127.0.0.1:9';

/** A TCP socket to `port` that never says a word; resolves once connected. */
const silentSocket = (port: number) =>
  new Promise<net.Socket>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => resolve(socket));
    socket.on('error', () => {});
    socket.once('error', reject);
  });
/** Milliseconds until the server closes `socket` (its end or a reset), or null when it is still open after `withinMs`. */
const closedWithin = (socket: net.Socket, withinMs: number) =>
  new Promise<number | null>((resolve) => {
    const started = performance.now();
    const timer = setTimeout(() => resolve(null), withinMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(performance.now() - started);
    });
    socket.resume();
  });
/** A TLS handshake with the gateway: the negotiated protocol and cipher, or the error that ended it. */
const handshake = (port: number, options: tls.ConnectionOptions = {}) =>
  new Promise<{ protocol: string | null; cipher: string } | { error: string }>((resolve) => {
    const socket = tls.connect(
      { port, host: '127.0.0.1', servername: 'localhost', ca: bundle.servingCa.certificatePem, ...options },
      () => {
        resolve({ protocol: socket.getProtocol(), cipher: socket.getCipher().name });
        socket.destroy();
      },
    );
    socket.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
  });

describe('the gateway process closes sockets that never handshake', () => {
  let gateway: SpawnedGateway;
  beforeAll(async () => {
    gateway = await spawnGateway({ credentials, apiUrl, env: { BETTER_COMPUTE_GATEWAY_HANDSHAKE_TIMEOUT_SECONDS: '1' } });
  }, 60_000);
  afterAll(() => gateway?.stop());

  it('after the handshake timeout (1 s here, 10 s by default), while a handshake in time still works', async () => {
    const sockets = await Promise.all(Array.from({ length: 20 }, () => silentSocket(gateway.port)));
    const closed = await Promise.all(sockets.map((s) => closedWithin(s, 5_000)));
    for (const ms of closed) {
      expect(ms).not.toBeNull();
      expect(ms!).toBeGreaterThan(800);
    }
    expect(await handshake(gateway.port)).toMatchObject({ protocol: 'TLSv1.3' });
    expect(GATEWAY_LIMITS.handshakeMs).toBe(10_000);
  });

  it('refuses TLS 1.2 CBC and SHA-1 suites, and keeps TLS 1.3 and the AEAD ECDHE suites', async () => {
    for (const ciphers of ['ECDHE-ECDSA-AES128-SHA', 'ECDHE-ECDSA-AES256-SHA', 'ECDHE-ECDSA-AES128-SHA256', 'ECDHE-ECDSA-AES256-SHA384']) {
      expect(await handshake(gateway.port, { maxVersion: 'TLSv1.2', ciphers })).toMatchObject({ error: expect.any(String) });
    }
    for (const ciphers of ['ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-ECDSA-CHACHA20-POLY1305']) {
      expect(await handshake(gateway.port, { maxVersion: 'TLSv1.2', ciphers })).toEqual({ protocol: 'TLSv1.2', cipher: ciphers });
    }
    for (const ciphersuite of ['TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256']) {
      expect(await handshake(gateway.port, { minVersion: 'TLSv1.3', ciphers: ciphersuite })).toEqual({
        protocol: 'TLSv1.3',
        cipher: ciphersuite,
      });
    }
  });
});

describe('the gateway process caps its connections', () => {
  let gateway: SpawnedGateway;
  beforeAll(async () => {
    gateway = await spawnGateway({ credentials, apiUrl, env: { BETTER_COMPUTE_GATEWAY_MAX_CONNECTIONS: '3' } });
  }, 60_000);
  afterAll(() => gateway?.stop());

  it('closes a socket past maxConnections at once, and accepts again once one is freed', async () => {
    const held = [];
    for (let i = 0; i < 3; i++) held.push(await silentSocket(gateway.port));
    // Give the gateway's event loop a turn to accept all three.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const fourth = await silentSocket(gateway.port);
    expect(await closedWithin(fourth, 2_000)).not.toBeNull();
    expect(await handshake(gateway.port)).toMatchObject({ error: expect.any(String) });
    // The held ones are still open: the cap closes new sockets, not old ones.
    expect(held.every((s) => !s.destroyed)).toBe(true);

    held.pop()!.destroy();
    await expect.poll(() => handshake(gateway.port), { timeout: 5_000 }).toMatchObject({ protocol: 'TLSv1.3' });
    held.forEach((s) => s.destroy());
  });
});

describe('the gateway process caps the handshakes under way', () => {
  let gateway: SpawnedGateway;
  beforeAll(async () => {
    gateway = await spawnGateway({ credentials, apiUrl, env: { BETTER_COMPUTE_GATEWAY_MAX_HANDSHAKES: '2' } });
  }, 60_000);
  afterAll(() => gateway?.stop());

  it('closes a socket at accept while maxHandshakes have not finished theirs, and keeps finished connections open', async () => {
    // A finished handshake does not count: this connection stays open through the test. The client's side of a
    // TLS 1.3 handshake ends before the server has read the client's Finished, so wait for an answer to a request
    // on it: then the gateway has finished the handshake too, and no longer counts it as under way.
    const finished = await new Promise<tls.TLSSocket>((resolve) => {
      const socket = tls.connect(
        { port: gateway.port, host: '127.0.0.1', servername: 'localhost', ca: bundle.servingCa.certificatePem },
        () => {
          socket.once('data', () => resolve(socket));
          socket.write('GET /api/compute/.well-known/better-compute HTTP/1.1\r\nHost: localhost\r\n\r\n');
        },
      );
      socket.on('error', () => {});
    });
    const stalled = [await silentSocket(gateway.port), await silentSocket(gateway.port)];
    await new Promise((resolve) => setTimeout(resolve, 300));
    const third = await silentSocket(gateway.port);
    expect(await closedWithin(third, 2_000)).not.toBeNull();
    expect(await handshake(gateway.port)).toMatchObject({ error: expect.any(String) });
    expect(stalled.every((s) => !s.destroyed)).toBe(true);
    expect(finished.destroyed).toBe(false);

    stalled.pop()!.destroy();
    await expect.poll(() => handshake(gateway.port), { timeout: 5_000 }).toMatchObject({ protocol: 'TLSv1.3' });
    stalled.forEach((s) => s.destroy());
    finished.destroy();
  });
});

describe('header and request timeouts after the handshake', () => {
  let server: GatewayServer;
  let port: number;
  beforeAll(async () => {
    ({ server, port } = await unrelayedGateway({ headersMs: 400, requestMs: 800, checkIntervalMs: 100 }));
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const tlsSocket = () =>
    new Promise<tls.TLSSocket>((resolve) => {
      const socket = tls.connect({ port, host: '127.0.0.1', servername: 'localhost', ca: bundle.servingCa.certificatePem }, () =>
        resolve(socket),
      );
      socket.on('error', () => {});
    });

  it('closes a connection that sends no request, or only part of its headers, or trickles its body', async () => {
    const idle = await tlsSocket();
    const partial = await tlsSocket();
    partial.write('POST /api/compute/v1/join HTTP/1.1\r\nhost: localhost\r\n');
    const trickle = await tlsSocket();
    trickle.write('POST /api/compute/v1/join HTTP/1.1\r\nhost: localhost\r\ncontent-length: 1000\r\n\r\n{');
    const ticker = setInterval(() => trickle.write(' '), 100);
    try {
      const [a, b, c] = await Promise.all([closedWithin(idle, 3_000), closedWithin(partial, 3_000), closedWithin(trickle, 3_000)]);
      expect(a).not.toBeNull();
      expect(b).not.toBeNull();
      expect(c).not.toBeNull();
      // The request bound (800 ms) ends the trickle; the header bound (400 ms) the others.
      expect(c!).toBeGreaterThan(600);
    } finally {
      clearInterval(ticker);
    }
  });
});

describe('gatewayLimitsFromEnv', () => {
  it('reads the two settings, defaults the rest, and names a bad value', () => {
    expect(gatewayLimitsFromEnv({})).toEqual(GATEWAY_LIMITS);
    expect(
      gatewayLimitsFromEnv({ BETTER_COMPUTE_GATEWAY_HANDSHAKE_TIMEOUT_SECONDS: '3', BETTER_COMPUTE_GATEWAY_MAX_CONNECTIONS: '50' }),
    ).toEqual({ ...GATEWAY_LIMITS, handshakeMs: 3_000, maxConnections: 50 });
    for (const bad of ['0', '121', '1.5', '-1', 'ten', '1e1']) {
      expect(() => gatewayLimitsFromEnv({ BETTER_COMPUTE_GATEWAY_HANDSHAKE_TIMEOUT_SECONDS: bad })).toThrow(
        `BETTER_COMPUTE_GATEWAY_HANDSHAKE_TIMEOUT_SECONDS must be a whole number from 1 to 120, not ${bad}`,
      );
    }
    expect(() => gatewayLimitsFromEnv({ BETTER_COMPUTE_GATEWAY_MAX_CONNECTIONS: '0' })).toThrow(/BETTER_COMPUTE_GATEWAY_MAX_CONNECTIONS/);
    expect(gatewayLimitsFromEnv({ BETTER_COMPUTE_GATEWAY_MAX_HANDSHAKES: '64' })).toEqual({ ...GATEWAY_LIMITS, maxHandshakes: 64 });
    expect(GATEWAY_LIMITS.maxHandshakes).toBe(256);
    expect(() => gatewayLimitsFromEnv({ BETTER_COMPUTE_GATEWAY_MAX_HANDSHAKES: '0' })).toThrow(
      'BETTER_COMPUTE_GATEWAY_MAX_HANDSHAKES must be a whole number from 1 to 100000, not 0',
    );
  });
});
