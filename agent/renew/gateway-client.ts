import http from 'node:http';
import { isIP } from 'node:net';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { spkiPin } from '../../protocol/pins';
import { connectTls13, type Tls13Socket, type TlsClientSigner } from '../tls13/client';
import { logAgentRequest, newAgentRequestId, REQUEST_ID_HEADER } from '../request-log';
import type { TrustStore } from '../trust/store';
import { agentErrorClass } from '../errors';

/** How the agent reaches the gateway: its URL and the serving CA it pins. */
export interface GatewayTarget {
  gatewayUrl: string;
  servingCaPin: string;
  /** The name the gateway's leaf must carry; the URL's host when absent. */
  gatewayServerName?: string;
  /**
   * The trust set the agent holds: when given, a chain is accepted under any of its serving CA pins (read at
   * each connection, so a set applied mid-session counts for the next one) instead of `servingCaPin` alone.
   */
  trust?: TrustStore;
}

/** The serving CA pins a connection to `target` accepts. */
export function servingCaPinsOf(target: GatewayTarget): readonly string[] {
  const pins = target.trust?.servingCaPins();
  return pins?.length ? pins : [target.servingCaPin];
}

/**
 * The client identity presented to the gateway: a software key and its certificate (PEM), or a signer for a key
 * that never leaves its holder (a TPM), which agent/tls13's client uses; absent for a probe.
 */
export type ClientIdentity = { keyPem: string; certificatePem: string; signer?: undefined } | { signer: TlsClientSigner };

export class GatewayTrustError extends agentErrorClass('TRUST', 'GatewayTrustError') {}

const pem = (der: Buffer) =>
  `-----BEGIN CERTIFICATE-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;

/** b64 DER certificates as one PEM string, in order. */
export const chainToPem = (chain: readonly string[]) => chain.map((c) => pem(Buffer.from(c, 'base64'))).join('');

// Chains that passed the checks below, by the leaf's and the CA's bytes, pin and name: the same bytes verify
// the same way, so a second connection to the same gateway re-checks only the validity dates.
const checkedChains = new Map<string, { leaf: X509Certificate; from: Date; to: Date }>();

function assertValidNow(checked: { from: Date; to: Date }, now: Date) {
  if (now < checked.from || now > checked.to) throw new GatewayTrustError("the gateway's certificate is not valid now");
}

/** The most certificates of a presented chain that are looked at (leaf, serving CA, a cross-signing CA or two). */
const MAX_CHAIN = 4;

/**
 * Checks the gateway's presented chain against the pins, without trusting any system CA: walking up from the
 * leaf, each certificate is a CA that issued and signed the one before, until one whose key has a pin of
 * `servingCaPins` (the trust set's, or the one of config.toml); the leaf is valid now and names `serverName`
 * (dNSName or iPAddress). The serving CA normally follows the leaf directly; a CA between them (the new serving
 * CA certified by the old one) is followed too.
 *
 * @throws GatewayTrustError saying which check failed.
 */
export function checkGatewayChain(
  socket: tls.TLSSocket,
  servingCaPins: string | readonly string[],
  serverName: string,
  now = new Date(),
): X509Certificate {
  // getPeerX509Certificate, not getPeerCertificate(true): the legacy object decodes every field of both
  // certificates, which cost a tenth of an agent's CPU per renewal in bench:renew.
  const peer = socket.getPeerX509Certificate();
  if (!peer) throw new GatewayTrustError('the gateway presented no certificate');
  const chain = [peer.raw];
  for (
    let cert = peer.issuerCertificate;
    cert && chain.length < MAX_CHAIN && !chain.some((c) => c.equals(cert!.raw));
    cert = cert.issuerCertificate
  )
    chain.push(cert.raw);
  return checkGatewayChainDer(chain, servingCaPins, serverName, now);
}

/**
 * {@link checkGatewayChain} on the chain as DER, leaf first (the certificate after the leaf is the serving CA),
 * for a TLS client that hands the server's Certificate message over as it came (agent/tls13).
 */
export function checkGatewayChainDer(
  chain: readonly Buffer[],
  servingCaPins: string | readonly string[],
  serverName: string,
  now = new Date(),
): X509Certificate {
  const pins = typeof servingCaPins === 'string' ? [servingCaPins] : servingCaPins;
  const [leafDer, caDer] = chain;
  if (!leafDer) throw new GatewayTrustError('the gateway presented no certificate');
  if (!caDer) throw new GatewayTrustError('the gateway presented no serving CA after its leaf');
  const cacheKey = `${pins.join(',')}|${serverName}|${chain
    .slice(0, MAX_CHAIN)
    .map((der) => der.toString('base64'))
    .join('|')}`;
  let checked = checkedChains.get(cacheKey);
  if (!checked) {
    const leaf = new X509Certificate(leafDer);
    let child = leaf;
    for (let i = 1; ; i++) {
      const der = chain[i];
      if (!der || i >= MAX_CHAIN)
        throw new GatewayTrustError("the gateway's serving CA does not match the pinned servingCaPin or a serving CA pin of the trust set");
      const ca = new X509Certificate(der);
      if (!ca.ca || !child.checkIssued(ca) || !child.verify(ca.publicKey))
        throw new GatewayTrustError(
          i === 1 && !pins.includes(spkiPin(ca.publicKey))
            ? "the gateway's serving CA does not match the pinned servingCaPin or a serving CA pin of the trust set"
            : "the gateway's leaf is not signed by the pinned serving CA",
        );
      if (pins.includes(spkiPin(ca.publicKey))) break;
      child = ca;
    }
    checked = { leaf, from: new Date(leaf.validFrom), to: new Date(leaf.validTo) };
    assertValidNow(checked, now);
    const named = isIP(serverName) ? leaf.checkIP(serverName) : leaf.checkHost(serverName);
    if (!named) throw new GatewayTrustError(`the gateway's certificate does not name ${serverName}`);
    if (checkedChains.size >= 16) checkedChains.clear();
    checkedChains.set(cacheKey, checked);
  }
  assertValidNow(checked, now);
  return checked.leaf;
}

// The TLS context of a client identity, made once per identity object: parsing the PEM key and certificate
// into a new context took about a third of a client's CPU per connection when thousands of sessions reconnect
// (bench:sessions). Held as long as the identity object is.
const secureContexts = new WeakMap<ClientIdentity, tls.SecureContext>();
function secureContextOf(client: ClientIdentity & { signer?: undefined }): tls.SecureContext {
  let context = secureContexts.get(client);
  if (!context) {
    context = tls.createSecureContext({ key: client.keyPem, cert: client.certificatePem });
    secureContexts.set(client, context);
  }
  return context;
}

/**
 * Opens a TLS connection to the gateway and checks its chain before any byte of a request is sent. A client
 * identity with a `signer` goes through agent/tls13 (TLS 1.3, the CertificateVerify signed by the signer), with
 * the same chain checks, made before anything is signed.
 */
export function connectGateway(
  target: GatewayTarget,
  client?: ClientIdentity,
  timeoutMs = 15_000,
  alpn: string[] = ['http/1.1'],
): Promise<tls.TLSSocket | Tls13Socket> {
  const url = new URL(target.gatewayUrl);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const serverName = target.gatewayServerName ?? host;
  if (client?.signer)
    return connectTls13({
      host,
      port: Number(url.port || 443),
      serverName,
      alpn,
      signer: client.signer,
      timeoutMs,
      verifyServerChain: (chain) => void checkGatewayChainDer(chain, servingCaPinsOf(target), serverName),
    });
  return new Promise((resolve, reject) => {
    const socket = tls.connect({
      host,
      port: Number(url.port || 443),
      servername: isIP(serverName) ? undefined : serverName,
      // The chain is checked against the pin below, not against the system's CAs.
      rejectUnauthorized: false,
      ...(client ? { secureContext: secureContextOf(client) } : {}),
      ALPNProtocols: alpn,
    });
    const timer = setTimeout(() => socket.destroy(new Error(`the gateway did not answer within ${timeoutMs} ms`)), timeoutMs);
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    socket.once('secureConnect', () => {
      clearTimeout(timer);
      try {
        checkGatewayChain(socket, servingCaPinsOf(target), serverName);
        resolve(socket);
      } catch (error) {
        socket.destroy();
        reject(error);
      }
    });
  });
}

/** POSTs `body` as JSON to `path` on a checked gateway connection; resolves to status and body bytes. */
export async function postToGateway(
  target: GatewayTarget,
  client: ClientIdentity | undefined,
  pathname: string,
  body: string,
  timeoutMs = 30_000,
): Promise<{ status: number; body: Buffer }> {
  const requestId = newAgentRequestId();
  const startedAt = performance.now();
  let logged = false;
  const line = (status: number | null) => {
    if (!logged) logAgentRequest({ requestId, method: 'POST', path: pathname, status, startedAt });
    logged = true;
  };
  const socket = await connectGateway(target, client, timeoutMs).catch((error: unknown) => {
    line(null);
    throw error;
  });
  const url = new URL(target.gatewayUrl);
  return new Promise((resolve, reject) => {
    const fail = (error: Error) => {
      line(null);
      reject(error);
    };
    const request = http.request(
      {
        method: 'POST',
        host: url.host,
        path: pathname,
        headers: {
          host: url.host, // as the URL writes it: given only `host`, Node appends a port of its own
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          connection: 'close',
          [REQUEST_ID_HEADER]: requestId,
        },
        createConnection: () => socket,
        timeout: timeoutMs,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          line(response.statusCode ?? 0);
          resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) });
        });
        response.on('error', fail);
      },
    );
    request.on('timeout', () => request.destroy(new Error('the gateway did not answer in time')));
    request.on('error', fail);
    request.end(body);
  });
}
