import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Principal } from '../authz/principal';
import { BASE_PATH, PRODUCT_VERSION } from '../config/config';
import type { Db } from '../db/client';
import { BCD_ARCHES } from '../downloads/serve';
import { DomainError } from '../../protocol/errors';
import { loadCurrentPkiRuntime } from '../join/join-runtime';
import { loadPool } from '../pools/pools';
import { renderInstallScript } from './install-script';
import { fetchReleaseDigests } from './release-manifest';
import type { InstallScriptInput } from '../../protocol/api/daemon-schemas';
import type { InstallPins } from '../pki/pins-summary';
import type { PublicEcJwk } from '../pki/issuance/join-crypto';

/** Who may make the server fetch a release manifest: the roles that mint join tokens. */
const MANIFEST_ACTION = 'compute:join-tokens:create' as const;

/** The digests in `dir/<version>/SHA256SUMS` (what build:bcd writes), by arch. */
export async function readBuiltDigests(dir: string, version: string): Promise<{ amd64?: string; arm64?: string }> {
  const text = await readFile(path.join(dir, version, 'SHA256SUMS'), 'utf8').catch(() => '');
  const digests: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const match = /^([0-9a-f]{64}) [ *]linux-(\w+)$/.exec(line.trim());
    if (match && (BCD_ARCHES as readonly string[]).includes(match[2]!)) digests[match[2]!] = match[1]!;
  }
  return digests;
}

/**
 * The pins an install embeds (bootstrapPins' three, server/pki/pins-summary.ts) and the public join key, from the
 * keys in use now: what is generated after an activation carries the new keys. Shared by the install script and
 * provisioning user data. INVALID_CONFIG without a PKI.
 */
export async function currentInstallPins(
  db: Db,
): Promise<Pick<InstallPins, 'servingCaPin' | 'joinSigningKeyPin' | 'joinEncryptionKeyPin'> & { encryptionJwk: PublicEcJwk }> {
  const pki = await loadCurrentPkiRuntime(db);
  if (!pki) throw new DomainError('INVALID_CONFIG', 'The PKI is not initialised (better-compute pki init): there are no pins to embed');
  return {
    servingCaPin: pki.servingCaPin,
    joinSigningKeyPin: pki.crypto.signingKeyPin,
    joinEncryptionKeyPin: pki.crypto.encryptionKeyPin,
    encryptionJwk: pki.crypto.encryptionPublicJwk,
  };
}

/**
 * Generates a pool's install script (`daemon.installScript`): the pins and the JoinService encryption key
 * from the loaded PKI, the pool's site, the gateway and the bcd version with its digests. Readers of the pool
 * may generate it: it holds no secret, the join token stays with whoever runs it.
 *
 * With releaseManifestUrl the digests are those of a signed release manifest whose key matches releasePins.
 * That makes the server fetch a URL, so it is decided as `compute:join-tokens:create` (operators and admins,
 * who mint the tokens the script is run with), and the fetch keeps to the allowed origins (manifest-fetch.ts).
 *
 * @throws DomainError NOT_FOUND (pool), ACCESS_DENIED (a manifest URL from a viewer), INVALID_ARGUMENT (site
 *   not the pool's, no digest, a manifest refused), INVALID_CONFIG (no PKI).
 */
export async function generateInstallScript(db: Db, principal: Principal, input: InstallScriptInput, downloadsDir: string) {
  const pool = await loadPool(db, principal, input.releaseManifestUrl ? MANIFEST_ACTION : 'compute:pools:read', input).catch(
    (error: unknown) => {
      if (error instanceof DomainError && error.code === 'ACCESS_DENIED') {
        throw new DomainError(
          'ACCESS_DENIED',
          `A script from a release manifest (releaseManifestUrl) needs the operator or admin role (${MANIFEST_ACTION})`,
          { field: 'releaseManifestUrl' },
        );
      }
      throw error;
    },
  );
  if (input.siteId && input.siteId !== pool.siteId) {
    throw new DomainError('INVALID_ARGUMENT', `Pool ${pool.id} is in site ${pool.siteId}, not ${input.siteId}`, { field: 'siteId' });
  }
  const pins = await currentInstallPins(db);
  const bcdVersion = input.bcdVersion ?? PRODUCT_VERSION;
  const sha256 =
    input.sha256 ??
    (input.releaseManifestUrl && input.releasePins
      ? await fetchReleaseDigests(input.releaseManifestUrl, input.releasePins, bcdVersion, downloadsDir)
      : await readBuiltDigests(downloadsDir, bcdVersion));
  if (!sha256.amd64 && !sha256.arm64) {
    throw new DomainError(
      'INVALID_ARGUMENT',
      `No digest for bcd ${bcdVersion}: pass sha256, or build it on this server (npm run build:bcd)`,
      { field: 'sha256' },
    );
  }
  const script = renderInstallScript({
    poolId: pool.id,
    siteId: pool.siteId,
    gatewayUrl: input.gatewayUrl,
    baseUrl: input.baseUrl,
    basePath: BASE_PATH,
    bcdVersion,
    sha256,
    ...pins,
    generatedBy: `better-compute ${PRODUCT_VERSION}`,
  });
  return { filename: 'install-bcd.sh', script, bcdVersion, sha256 };
}
