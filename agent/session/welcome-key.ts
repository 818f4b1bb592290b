import http from 'node:http';
import type { KeyObject } from 'node:crypto';
import { DEFAULT_BASE_PATH } from '../join';
import { connectGateway, type GatewayTarget } from '../renew/gateway-client';
import type { TrustStore } from '../trust/store';
import { learnFromWellKnown } from '../trust/well-known';

/** Reads of the well-known document under way, by gateway and base path. */
const reading = new Map<string, Promise<unknown>>();

/** Reads the well-known document through the gateway (its chain checked against the pins before anything is sent). */
async function fetchWellKnown(target: GatewayTarget & { basePath?: string }, timeoutMs: number): Promise<unknown> {
  const pathname = `${target.basePath ?? DEFAULT_BASE_PATH}/.well-known/better-compute`;
  const socket = await connectGateway(target, undefined, timeoutMs);
  const body = await new Promise<Buffer>((resolve, reject) => {
    const request = http.request(
      {
        method: 'GET',
        host: new URL(target.gatewayUrl).host,
        path: pathname,
        headers: { host: new URL(target.gatewayUrl).host, accept: 'application/json', connection: 'close' },
        createConnection: () => socket,
        timeout: timeoutMs,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          response.statusCode === 200
            ? resolve(Buffer.concat(chunks))
            : reject(new Error(`the well-known document answered ${response.statusCode}`)),
        );
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error(`the well-known document did not arrive within ${timeoutMs} ms`)));
    request.on('error', reject);
    request.end();
  });
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new Error('the well-known document is not JSON');
  }
}

/**
 * The keys a session's `welcome` (and every later envelope) must verify under (protocol.md "Sessions" and
 * "Trust rotation"). The agent holds pins, not keys: the join-signing certificates come from the well-known
 * document (`join.signingCertificate` and, during a rotation, `join.next.signingCertificate`), read through the
 * gateway, and each is kept only when its key hashes to a signing pin of the trust set held. The encryption
 * JWKs published there are learned the same way.
 *
 * @returns the trusted signing keys known after the fetch, by pin.
 * @throws Error when the document cannot be read or publishes no key of a trusted pin.
 */
export async function fetchWelcomeKeys(
  target: GatewayTarget & { basePath?: string },
  trust: TrustStore,
  timeoutMs = 15_000,
): Promise<ReadonlyMap<string, KeyObject>> {
  // Agents of one process asking at once (simulated agents after a trust event) share one read of the document:
  // what it publishes is checked against each one's pins, so who fetched it does not matter.
  const key = `${target.gatewayUrl}${target.basePath ?? DEFAULT_BASE_PATH}`;
  let pending = reading.get(key);
  if (!pending) {
    pending = fetchWellKnown(target, timeoutMs).finally(() => reading.delete(key));
    reading.set(key, pending);
  }
  learnFromWellKnown(trust, await pending);
  const keys = trust.signingKeys();
  if (keys.size === 0)
    throw new Error(
      'the join signing certificate of the well-known document does not match join_signing_key_pin or a pin of the trust set',
    );
  return keys;
}
