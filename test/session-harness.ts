import { X509Certificate, type KeyObject } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { createRenewHarness, type RenewHarness } from './renew-harness';

/**
 * A renew harness for the calling test file: created before its tests and handed to `use` with the key that
 * verifies session welcomes (the join-signing key), closed after them.
 */
export function useRenewHarness(
  use: (created: { r: RenewHarness; signingKey: KeyObject }) => void,
  options?: Parameters<typeof createRenewHarness>[0],
): void {
  let r: RenewHarness | undefined;
  beforeAll(async () => {
    r = await createRenewHarness(options);
    use({ r, signingKey: new X509Certificate(r.h.trust.signingCertificateDer).publicKey });
  });
  afterAll(async () => {
    await r?.close();
  });
}
