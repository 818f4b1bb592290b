import { open } from 'node:fs/promises';
import path from 'node:path';
import { BASE_PATH } from '../config/config';
import { DomainError, invalidArgument } from '../../protocol/errors';
import { consoleOrigin } from '../http/request-rules';
import { AddressRefused, bareHost, requestPinned, resolveCheckedAddresses, type Address } from '../http/pinned-request';
import { logLimited } from '../log';
import { isLoopbackAddress, isPublicAddress } from './public-address';

export const MANIFEST_MAX_BYTES = 64 * 1024;
const MANIFEST_TIMEOUT_MS = 10_000;

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
  for (const entry of (env[MANIFEST_ORIGINS_ENV] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    let url: URL | null = null;
    try {
      url = new URL(entry);
    } catch {
      url = null;
    }
    const scheme = url?.protocol === 'https:' || (testHttp && url?.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname));
    if (!url || !scheme || url.username || url.password || url.pathname !== '/' || url.search || url.hash) {
      throw new DomainError(
        'INVALID_CONFIG',
        `${MANIFEST_ORIGINS_ENV} takes https origins (https://host[:port], comma-separated), not ${entry}`,
      );
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

/** Resolves `host` once; every address must be public (or loopback for a test's plain-http origin). */
async function checkedAddresses(host: string, allowLoopback: boolean): Promise<Address[]> {
  try {
    return await resolveCheckedAddresses(host, (address) => isPublicAddress(address) || (allowLoopback && isLoopbackAddress(address)));
  } catch (error) {
    throw error instanceof AddressRefused ? new Refused(error.message) : error;
  }
}

/** GETs `url` from the addresses checked before (requestPinned): 2xx only, at most MANIFEST_MAX_BYTES. */
async function get(url: URL, targets: Address[], signal: AbortSignal): Promise<Buffer> {
  const answer = await requestPinned(url, targets, {
    method: 'GET',
    headers: { accept: 'application/json' },
    maxBodyBytes: MANIFEST_MAX_BYTES,
    signal,
  });
  if (answer.status < 200 || answer.status > 299) throw new Refused(`answered HTTP ${answer.status}`);
  if (answer.truncated) throw new Refused('the manifest is too large');
  return answer.body;
}

/**
 * Fetches a release manifest's bytes for the install-script generator. A URL under this server's own
 * downloads path (on NEXTAUTH_URL's origin) is read from `downloadsDir`; any other must be on an origin of
 * MANIFEST_ORIGINS_ENV, resolve only to public addresses, and answer within the size and time bounds.
 *
 * @throws DomainError INVALID_ARGUMENT on `releaseManifestUrl`, with one message whatever failed.
 */
export async function fetchManifestBytes(
  value: string,
  downloadsDir: string,
  env: Record<string, string | undefined> = process.env,
): Promise<Buffer> {
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
      const targets = await checkedAddresses(bareHost(url), url.protocol === 'http:');
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
