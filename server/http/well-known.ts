import type { Db } from '../db/client';
import { BASE_PATH, PRODUCT_VERSION, gatewayConfig } from '../config/config';
import { loadPkiRuntime } from '../join/join-runtime';
import { wellKnownJoinSection } from '../pki/join-crypto';

/**
 * `GET {basePath}/.well-known/better-compute`, exactly as protocol.md fixes it. The `join` section appears
 * once JoinService keys are configured, the `gateway` section once a gateway is.
 */
export async function buildWellKnownDocument(db: Db): Promise<Record<string, unknown>> {
  const doc: Record<string, unknown> = {
    name: 'better-compute',
    version: PRODUCT_VERSION,
    basePath: BASE_PATH,
    protocol: { min: 1, max: 1 },
  };
  const pki = await loadPkiRuntime(db);
  if (pki) doc.join = wellKnownJoinSection(pki.crypto);
  const gateway = gatewayConfig();
  // The gateway section carries the serving CA's pin, so it appears only once the PKI is loaded.
  if (gateway && pki) {
    doc.gateway = { url: gateway.url, serverName: gateway.serverName, servingCaPin: pki.servingCaPin };
  }
  return doc;
}
