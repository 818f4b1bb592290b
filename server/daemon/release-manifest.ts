import { createPublicKey, createVerify, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import { invalidArgument } from '../../protocol/errors';
import { spkiPin } from '../../protocol/pins';
import { fetchManifestBytes } from './manifest-fetch';

/**
 * A signed release manifest (docs/operator-guide.md, "Signed release manifests"):
 * `{ payload: b64(UTF-8 JSON {name, version, artifacts: {"linux-amd64": {sha256, size}, …}}),
 *    signature: b64(ECDSA P-256 SHA-256, DER, over the payload's bytes), publicKey: b64(SPKI DER) }`.
 * scripts/release-manifest.mjs writes it. The generator trusts it only through a pin of its key, so the script it writes holds digests that the
 * release key vouched for, and no secret.
 */
export { MANIFEST_MAX_BYTES } from './manifest-fetch';

const b64 = z.string().regex(/^[A-Za-z0-9+/]+={0,2}$/, 'standard base64');
const envelopeSchema = z.object({ payload: b64, signature: b64, publicKey: b64 });
const artifactSchema = z.object({
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'a lowercase hex SHA-256'),
  size: z.number().int().nonnegative(),
});
const payloadSchema = z.object({
  name: z.literal('bcd'),
  version: z.string(),
  artifacts: z.object({ 'linux-amd64': artifactSchema.optional(), 'linux-arm64': artifactSchema.optional() }),
});
export type ReleasePayload = z.infer<typeof payloadSchema>;
type ReleaseDigests = { amd64?: string; arm64?: string };

const URL_FIELD = 'releaseManifestUrl';
const PINS_FIELD = 'releasePins';

/**
 * Checks a manifest's bytes: its key's pin is one of `pins`, its signature verifies over the payload's bytes,
 * it is bcd `version`, and every digest is 64 hex. Returns the digests by arch.
 *
 * @throws DomainError INVALID_ARGUMENT with field `releasePins` (pin mismatch) or `releaseManifestUrl` (the rest).
 */
function verifyReleaseManifest(bytes: Buffer, pins: readonly string[], version: string): ReleaseDigests {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw invalidArgument(URL_FIELD, 'the manifest is not JSON');
  }
  const envelope = envelopeSchema.safeParse(json);
  if (!envelope.success) throw invalidArgument(URL_FIELD, 'the manifest needs base64 payload, signature and publicKey');
  const keyDer = Buffer.from(envelope.data.publicKey, 'base64');
  let publicKey: KeyObject;
  try {
    publicKey = createPublicKey({ key: keyDer, format: 'der', type: 'spki' });
  } catch {
    throw invalidArgument(URL_FIELD, 'the manifest publicKey is not a SubjectPublicKeyInfo');
  }
  if (publicKey.asymmetricKeyType !== 'ec' || publicKey.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
    throw invalidArgument(URL_FIELD, 'the manifest publicKey is not a P-256 key');
  }
  // The pin is checked first: a key nobody pinned says nothing, however well it signs.
  const pin = spkiPin(keyDer);
  if (!pins.includes(pin)) throw invalidArgument(PINS_FIELD, `the manifest is signed by ${pin}, which is not one of the pins given`);
  const payloadBytes = Buffer.from(envelope.data.payload, 'base64');
  const signature = Buffer.from(envelope.data.signature, 'base64');
  if (!createVerify('sha256').update(payloadBytes).verify({ key: publicKey, dsaEncoding: 'der' }, signature)) {
    throw invalidArgument(URL_FIELD, 'the manifest signature does not verify over its payload');
  }
  let payloadJson: unknown;
  try {
    payloadJson = JSON.parse(payloadBytes.toString('utf8'));
  } catch {
    throw invalidArgument(URL_FIELD, 'the manifest payload is not JSON');
  }
  const payload = payloadSchema.safeParse(payloadJson);
  if (!payload.success) {
    throw invalidArgument(
      URL_FIELD,
      `the manifest payload is malformed: ${payload.error.issues.map((i) => `${i.path.join('.')} ${i.message}`).join('; ')}`,
    );
  }
  if (payload.data.version !== version) throw invalidArgument(URL_FIELD, `the manifest is for bcd ${payload.data.version}, not ${version}`);
  const { 'linux-amd64': amd64, 'linux-arm64': arm64 } = payload.data.artifacts;
  if (!amd64 && !arm64) throw invalidArgument(URL_FIELD, 'the manifest lists no linux-amd64 or linux-arm64 artifact');
  return { ...(amd64 ? { amd64: amd64.sha256 } : {}), ...(arm64 ? { arm64: arm64.sha256 } : {}) };
}

/**
 * Fetches the manifest at `url` under the fetch policy of {@link fetchManifestBytes} (this server's own
 * downloads, or an allowed origin on a public address) and verifies it (see {@link verifyReleaseManifest}).
 */
export async function fetchReleaseDigests(
  url: string,
  pins: readonly string[],
  version: string,
  downloadsDir: string,
): Promise<ReleaseDigests> {
  return verifyReleaseManifest(await fetchManifestBytes(url, downloadsDir), pins, version);
}
