import type { Db } from '../db/client';
import { BASE_PATH, PRODUCT_VERSION, gatewayConfig } from '../config/config';
import { loadPkiRuntime } from '../join/runtime';
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
  if (gateway) {
    doc.gateway = { url: gateway.url, serverName: gateway.serverName, ...(pki ? { servingCaPin: pki.servingCaPin } : {}) };
  }
  return doc;
}
