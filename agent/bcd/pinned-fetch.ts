import { X509Certificate } from 'node:crypto';
import http from 'node:http';
import { isIP } from 'node:net';
import { once } from 'node:events';
import tls, { type DetailedPeerCertificate } from 'node:tls';
import { spkiPin } from '../../protocol/pins';
import type { TrustStore } from '../trust/store';

/**
 * Checks a gateway's TLS chain against the serving CA pins, as daemons authenticate the gateway: some certificate
 * the gateway sent has a pinned key (config.toml's, or one of the trust set's), it issued and signed the leaf
 * (or the CA that did, and so on up), and the leaf is current and names `serverName`. The system's CAs play no part. Returns why the chain is
 * refused, or null.
 */
function pinnedChainProblem(
  peer: DetailedPeerCertificate,
  servingCaPins: readonly string[],
  serverName: string,
  now = new Date(),
): string | null {
  const chain: X509Certificate[] = [];
  for (let cert: DetailedPeerCertificate | undefined = peer; cert?.raw && chain.length < 8; cert = cert.issuerCertificate) {
    chain.push(new X509Certificate(cert.raw));
    if (cert.issuerCertificate === cert) break;
  }
  const [leaf] = chain;
  if (!leaf) return 'the gateway sent no certificate';
  const trusted = (cert: X509Certificate) => servingCaPins.includes(spkiPin(cert.publicKey));
  if (!chain.slice(1).some(trusted))
    return 'no certificate the gateway sent has the key of serving_ca_spki_pin or of the trust set (does it send its full chain?)';
  // Up from the leaf, each CA issued and signed the certificate before it, until one with a trusted key (the
  // serving CA, or the old serving CA that certified a new one).
  let child = leaf;
  for (const ca of chain.slice(1)) {
    if (!ca.ca || !child.checkIssued(ca) || !child.verify(ca.publicKey))
      return 'the gateway certificate is not signed by the pinned serving CA';
    if (trusted(ca)) break;
    child = ca;
  }
  if (now < new Date(leaf.validFrom) || now > new Date(leaf.validTo))
    return `the gateway certificate is not valid now (${leaf.validFrom} to ${leaf.validTo})`;
  const named = isIP(serverName) ? leaf.checkIP(serverName) : leaf.checkHost(serverName);
  if (!named) return `the gateway certificate does not name ${serverName}`;
  return null;
}

/**
 * A `fetch` for the gateway: TLS authenticated by the serving CA pin alone (pinnedChainProblem), checked
 * before a byte of the request is written. Enough of fetch for the agent's calls (method, headers, a string
 * body, the status and body of the answer).
 */
export function pinnedFetch(options: {
  servingCaPin: string;
  serverName?: string;
  /** The trust set held: its serving CA pins replace `servingCaPin`, read at each request. */
  trust?: TrustStore;
  /** How long a call may take, from the TCP connect to the last byte of the answer (60 s, the gateway's relay bound). */
  timeoutMs?: number;
}): typeof fetch {
  return (async (input: string | URL | Request, init: RequestInit = {}) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.protocol !== 'https:') throw new Error(`${url.origin}: the gateway is reached over https only`);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const serverName = options.serverName ?? host;
    const socket = tls.connect({
      host,
      port: Number(url.port || 443),
      servername: isIP(serverName) ? undefined : serverName,
      rejectUnauthorized: false,
      ALPNProtocols: ['http/1.1'],
    });
    // A gateway that takes the connection and then says nothing must not hold bcd join for ever.
    const timeoutMs = options.timeoutMs ?? 60_000;
    const timer = setTimeout(
      () => socket.destroy(new Error(`${url.origin}: the gateway did not answer within ${Math.round(timeoutMs / 1000)} s`)),
      timeoutMs,
    );
    socket.once('close', () => clearTimeout(timer));
    await once(socket, 'secureConnect');
    const pins = options.trust?.servingCaPins() ?? [options.servingCaPin];
    const problem = pinnedChainProblem(socket.getPeerCertificate(true), pins, serverName);
    if (problem) {
      socket.destroy();
      throw new Error(`Refusing the gateway at ${url.origin}: ${problem}`);
    }
    const body = init.body == null ? undefined : Buffer.from(String(init.body));
    // The Host header as the URL writes it (`[fd00::1]:8443`): given only `host`, Node appends a port of its own.
    const headers: Record<string, string> = {
      host: url.host,
      ...(init.headers as Record<string, string> | undefined),
      ...(body ? { 'content-length': String(body.length) } : {}),
    };
    return new Promise<Response>((resolve, reject) => {
      const request = http.request(
        {
          host: url.host,
          path: `${url.pathname}${url.search}`,
          method: init.method ?? 'GET',
          headers,
          createConnection: () => socket,
          signal: init.signal ?? undefined,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', reject);
          response.on('end', () => {
            const status = response.statusCode ?? 502;
            const answerHeaders = new Headers();
            for (const [name, value] of Object.entries(response.headers)) if (typeof value === 'string') answerHeaders.set(name, value);
            resolve(new Response(status === 204 || status === 304 ? null : Buffer.concat(chunks), { status, headers: answerHeaders }));
            socket.end();
          });
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  }) as typeof fetch;
}
