import dns from 'node:dns/promises';
import { open } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net, { type LookupFunction } from 'node:net';
import path from 'node:path';
import { BASE_PATH } from '../config/config';
import { DomainError, invalidArgument } from '../../protocol/errors';
import { consoleOrigin } from '../http/request-rules';
import { logLimited } from '../log';
import { isLoopbackAddress, isPublicAddress } from './public-address';

export const MANIFEST_MAX_BYTES = 64 * 1024;
export const MANIFEST_TIMEOUT_MS = 10_000;

/** The origins (besides this server's own downloads) that the generator may fetch release manifests from. */
export const MANIFEST_ORIGINS_ENV = 'BETTER_COMPUTE_RELEASE_MANIFEST_ORIGINS';
/** For tests only: lets MANIFEST_ORIGINS_ENV name plain-http loopback origins, and the fetch connect to them. */
export const MANIFEST_TEST_HTTP_ENV = 'BETTER_COMPUTE_RELEASE_MANIFEST_TEST_HTTP';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const OWN_MANIFEST = new RegExp(`^${BASE_PATH}/downloads/bcd/(\\d+\\.\\d+\\.\\d+(?:-[0-9A-Za-z.-]+)?)/release-manifest\\.json$`);

/**
 * Every way a fetch can fail answers this one message: which of them happened (no such origin, a private
 * address, a closed port, a timeout, a status) would turn the generator into a scanner of the server's
 * network. The reason goes to the server's log.
 */
const fetchRefused = () =>
  invalidArgument(
    'releaseManifestUrl',
    `no release manifest could be fetched from it. Allowed are this server's own downloads (${BASE_PATH}/downloads/bcd/<version>/release-manifest.json) ` +
      `and https origins in ${MANIFEST_ORIGINS_ENV} on public addresses, answering 2xx without a redirect, at most ${MANIFEST_MAX_BYTES / 1024} KiB within ${MANIFEST_TIMEOUT_MS / 1000} s`,
  );

class Refused extends Error {}

/**
 * The origins of MANIFEST_ORIGINS_ENV (comma-separated `https://host[:port]`). Plain-http loopback origins
 * only with MANIFEST_TEST_HTTP_ENV=1.
 *
 * @throws DomainError INVALID_CONFIG for an entry that is not such an origin.
 */
export function releaseManifestOrigins(env: Record<string, string | undefined> = process.env): Set<string> {
  const testHttp = env[MANIFEST_TEST_HTTP_ENV] === '1';
  const origins = new Set<string>();
  for (const entry of (env[MANIFEST_ORIGINS_ENV] ?? '').split(',').map((s) => s.trim()).filter(Boolean)) {
    let url: URL | null = null;
    try {
      url = new URL(entry);
    } catch {
      url = null;
    }
    const scheme = url?.protocol === 'https:' || (testHttp && url?.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname));
    if (!url || !scheme || url.username || url.password || url.pathname !== '/' || url.search || url.hash) {
      throw new DomainError('INVALID_CONFIG', `${MANIFEST_ORIGINS_ENV} takes https origins (https://host[:port], comma-separated), not ${entry}`);
    }
    origins.add(url.origin);
  }
  return origins;
}

/** Reads a manifest of this server's own build from the downloads directory, never over the network. */
async function readOwnManifest(downloadsDir: string, version: string): Promise<Buffer> {
  const file = await open(path.join(downloadsDir, version, 'release-manifest.json'), 'r').catch(() => {
    throw new Refused(`this server has no release manifest for bcd ${version}`);
  });
  try {
    const { size } = await file.stat();
    if (size > MANIFEST_MAX_BYTES) throw new Refused('the manifest is too large');
    return await file.readFile();
  } finally {
    await file.close();
  }
}

type Address = { address: string; family: number };

/** Resolves `host` once; every address must be public (or loopback for a test's plain-http origin). */
async function checkedAddresses(host: string, allowLoopback: boolean): Promise<Address[]> {
  const addresses = net.isIP(host) ? [{ address: host, family: net.isIP(host) }] : await dns.lookup(host, { all: true, verbatim: true });
  const bad = addresses.find(({ address }) => !(isPublicAddress(address) || (allowLoopback && isLoopbackAddress(address))));
  if (addresses.length === 0 || bad) throw new Refused(`${host} resolves to ${bad?.address ?? 'nothing'}`);
  return addresses;
}

/**
 * GETs `url` from the addresses checked before, never resolving the name again (a second answer could point
 * elsewhere): `lookup` hands the connection those addresses (all of them to Node's happy eyeballs, which
 * asks with `all`), while TLS still verifies the certificate for the name. No redirect is followed and the
 * size cap holds while streaming, whatever Content-Length says.
 */
function get(url: URL, targets: Address[], signal: AbortSignal): Promise<Buffer> {
  const lookup: LookupFunction = (_host, options, callback) => {
    if (options.all) callback(null, targets);
    else callback(null, targets[0]!.address, targets[0]!.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(
      {
        protocol: url.protocol,
        hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
        port: url.port || undefined,
        path: url.pathname + url.search,
        method: 'GET',
        headers: { accept: 'application/json', host: url.host },
        lookup,
        agent: false,
        signal,
      },
      (response) => {
        const status = response.statusCode ?? 0;
        if (status < 200 || status > 299) {
          response.destroy();
          return reject(new Refused(`answered HTTP ${status}`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MANIFEST_MAX_BYTES) {
            response.destroy();
            reject(new Refused('the manifest is too large'));
          } else chunks.push(chunk);
        });
        response.on('end', () => resolve(Buffer.concat(chunks)));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end();
  });
}

/**
 * Fetches a release manifest's bytes for the install-script generator. A URL under this server's own
 * downloads path (on NEXTAUTH_URL's origin) is read from `downloadsDir`; any other must be on an origin of
 * MANIFEST_ORIGINS_ENV, resolve only to public addresses, and answer within the size and time bounds.
 *
 * @throws DomainError INVALID_ARGUMENT on `releaseManifestUrl`, with one message whatever failed.
 */
export async function fetchManifestBytes(value: string, downloadsDir: string, env: Record<string, string | undefined> = process.env): Promise<Buffer> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Refused(`no answer within ${MANIFEST_TIMEOUT_MS / 1000} s`)), MANIFEST_TIMEOUT_MS);
  const deadline = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(controller.signal.reason)));
  try {
    const work = (async () => {
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        throw new Refused('not a URL');
      }
      if (url.username || url.password) throw new Refused('the URL carries credentials');
      const own = OWN_MANIFEST.exec(url.pathname);
      if (own && !url.search && url.origin === consoleOrigin(env.NEXTAUTH_URL)) return readOwnManifest(downloadsDir, own[1]!);
      if (!releaseManifestOrigins(env).has(url.origin)) throw new Refused(`${url.origin} is not in ${MANIFEST_ORIGINS_ENV}`);
      // Only releaseManifestOrigins lets a plain-http origin through, and only a loopback one in test mode.
      const targets = await checkedAddresses(url.hostname.replace(/^\[(.*)\]$/, '$1'), url.protocol === 'http:');
      return get(url, targets, controller.signal);
    })();
    return await Promise.race([work, deadline]);
  } catch (error) {
    if (error instanceof DomainError && error.code === 'INVALID_CONFIG') throw error;
    logLimited('release-manifest-fetch', `refused a release manifest URL: ${error instanceof Error ? error.message : String(error)}`);
    throw fetchRefused();
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}
