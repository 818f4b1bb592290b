import { vouchedClientAddress } from '../vouching/vouch';
import type { PkiRuntime } from './join-runtime';
import { trustStateOf } from '../pki/rotation/trust-state';

/**
 * The address a join came from, as join requests and refusal events record it. `direct` is what the HTTP
 * layer decided from the socket (through BETTER_COMPUTE_TRUSTED_PROXIES when a proxy is trusted). A join the
 * gateway relayed carries the gateway's signed vouching with its caller's address: that address is used only
 * when the vouching verifies under a trusted serving CA for this very body and path; otherwise (no vouching,
 * a forged or stale one) the direct address stands, which is then the caller's or the gateway's own.
 */
export async function joinCallerAddress(
  direct: string,
  vouch: string | undefined,
  body: Uint8Array | null,
  path: string,
  loadRuntime: () => Promise<PkiRuntime | null>,
): Promise<string> {
  if (!vouch || !body) return direct;
  const runtime = await loadRuntime();
  if (!runtime) return direct;
  const pins = trustStateOf(runtime).servingCaPins;
  return vouchedClientAddress(vouch, Buffer.from(body.buffer, body.byteOffset, body.byteLength), path, pins) ?? direct;
}
