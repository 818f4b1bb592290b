import http from 'node:http';
import { X509Certificate, type KeyObject } from 'node:crypto';
import { spkiPin } from '../../protocol/pins';
import { DEFAULT_BASE_PATH } from '../join';
import { connectGateway, type GatewayTarget } from '../renew/gateway-client';

/**
 * The key a session's `welcome` must verify under (protocol.md "Sessions": a signed envelope, as for joins,
 * which the agent verifies against its pinned `join_signing_key_pin`). The agent holds the pin, not the key:
 * the join-signing certificate comes from the well-known document, read through the gateway whose serving CA
 * is pinned, and is accepted only when its key hashes to the pin.
 *
 * @throws Error when the document cannot be read or its certificate does not match the pin.
 */
export async function fetchWelcomeKey(
  target: GatewayTarget & { basePath?: string },
  joinSigningKeyPin: string,
  timeoutMs = 15_000,
): Promise<KeyObject> {
  const pathname = `${target.basePath ?? DEFAULT_BASE_PATH}/.well-known/better-compute`;
  const socket = await connectGateway(target, undefined, timeoutMs);
  const body = await new Promise<Buffer>((resolve, reject) => {
    const request = http.request(
      {
        method: 'GET',
        host: new URL(target.gatewayUrl).host,
        path: pathname,
        headers: { accept: 'application/json', connection: 'close' },
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
  let certificate: unknown;
  try {
    certificate = (JSON.parse(body.toString('utf8')) as { join?: { signingCertificate?: unknown } }).join?.signingCertificate;
  } catch {
    throw new Error('the well-known document is not JSON');
  }
  if (typeof certificate !== 'string') throw new Error('the well-known document publishes no join signing certificate');
  let key: KeyObject;
  try {
    key = new X509Certificate(Buffer.from(certificate, 'base64')).publicKey;
  } catch {
    throw new Error('the join signing certificate of the well-known document cannot be parsed');
  }
  if (spkiPin(key) !== joinSigningKeyPin)
    throw new Error('the join signing certificate of the well-known document does not match join_signing_key_pin');
  return key;
}
