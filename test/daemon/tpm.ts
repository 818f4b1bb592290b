import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TpmClient } from '../../agent/tpm/client';
import { createEndorsementKey } from '../../agent/tpm/endorsement';
import { ekHashOf } from '../../agent/tpm/identify';
import { parseTpmAddress } from '../../agent/tpm/transport';
import { parseTpmPublic, spkiOf } from '../../protocol/tpm/public-area';
import { startSwtpm, type Swtpm } from '../swtpm';
import { issueEkCertificate, writeEkCertificate, type EkIssuer } from '../tpm-provision';

/** A directory of trusted EK roots holding `vendor` (the server's BETTER_COMPUTE_TPM_EK_ROOTS). */
export function ekRootsDir(vendor: EkIssuer, prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  writeFileSync(path.join(dir, 'vendor.pem'), vendor.pem);
  return dir;
}

/**
 * A fresh swtpm (added to `started`, for the caller to stop) with an ECC EK; with `vendor`, the EK's certificate
 * from that root in its NV. Answers the TPM and its EK hash.
 */
export async function tpmWithEk(started: Swtpm[], vendor?: EkIssuer): Promise<{ tpm: Swtpm; ekHash: string }> {
  const tpm = await startSwtpm();
  started.push(tpm);
  // swtpm serves one connection at a time: this client is closed before bcd runs.
  const client = await TpmClient.open(parseTpmAddress(tpm.address));
  try {
    const ek = await createEndorsementKey(client, 'ecc');
    await client.flush(ek.handle);
    if (vendor)
      await writeEkCertificate(client, 'ecc', await issueEkCertificate(vendor, spkiOf(parseTpmPublic(ek.publicArea, 'EK')), 'ecc'));
    return { tpm, ekHash: ekHashOf(ek.publicArea) };
  } finally {
    await client.close();
  }
}
