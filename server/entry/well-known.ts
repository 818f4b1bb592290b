import { BASE_PATH, PRODUCT_VERSION, gatewayConfig } from '../config/config';
import type { PkiRuntime } from '../join/join-runtime';
import { wellKnownJoinSection } from '../pki/issuance/join-crypto';
import { trustStateOf, type TrustState } from '../pki/rotation/trust-state';

/**
 * `join.next` while a join-signing or join-encryption rotation is prepared or active: the same four fields as
 * `join`, each pair from the other key of its rotation (the key in use for the one not rotating); else null.
 */
function nextJoinSection(trust: TrustState) {
  const signing = trust.signingKeys[1];
  const encryption = trust.encryptionKeys[1];
  if (!signing && !encryption) return null;
  const sign = signing ?? trust.signingKeys[0]!;
  const seal = encryption ?? trust.encryptionKeys[0]!;
  const { kty, crv, x, y } = seal.jwk;
  return { encryptionJwk: { kty, crv, x, y }, encryptionKeyPin: seal.pin, signingCertificate: sign.certificate, signingKeyPin: sign.pin };
}

/**
 * `GET {basePath}/.well-known/better-compute`, exactly as protocol.md fixes it. The `join` section appears
 * once JoinService keys are configured, the `gateway` section once a gateway is. While a rotation is prepared
 * or active, `join.next` (signing or encryption key) and `gateway.servingCaPins` (serving CA, the one in use
 * first) name the keys an agent should also accept.
 */
export async function buildWellKnownDocument(loadPki: () => Promise<PkiRuntime | null>): Promise<Record<string, unknown>> {
  const doc: Record<string, unknown> = {
    name: 'better-compute',
    version: PRODUCT_VERSION,
    basePath: BASE_PATH,
    protocol: { min: 1, max: 1 },
  };
  const pki = await loadPki();
  const trust = pki ? trustStateOf(pki) : null;
  if (pki && trust) {
    const next = nextJoinSection(trust);
    doc.join = { ...wellKnownJoinSection(pki.crypto), ...(next ? { next } : {}) };
  }
  const gateway = gatewayConfig();
  // The gateway section carries the serving CA's pin, so it appears only once the PKI is loaded.
  if (gateway && pki && trust) {
    doc.gateway = {
      url: gateway.url,
      serverName: gateway.serverName,
      servingCaPin: pki.servingCaPin,
      ...(trust.servingCaPins.length > 1 ? { servingCaPins: trust.servingCaPins } : {}),
    };
  }
  return doc;
}
