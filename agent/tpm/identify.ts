import { createHash, X509Certificate } from 'node:crypto';
import { TpmClient } from './client';
import { createEndorsementKey } from './endorsement';
import { ekSpkiOf } from './public-area';
import type { EkKind } from './templates';
import { describeTpmAddress, parseTpmAddress } from './transport';

/** What an operator needs to allow-list a machine's TPM: its EK hash, and whether a vendor certified the EK. */
interface TpmIdentity {
  readonly ekKind: EkKind;
  /** Hex SHA-256 of the EK's DER SubjectPublicKeyInfo: the value sites' and pools' allow-lists hold. */
  readonly ekHash: string;
  /** The EK certificate's issuer, or null when the TPM holds none. */
  readonly ekCertificateIssuer: string | null;
}

/** The EK hash of an EK public area (TPMT_PUBLIC), as the server computes it. */
export function ekHashOf(publicArea: Buffer): string {
  return createHash('sha256').update(ekSpkiOf(publicArea)).digest('hex');
}

/** Reads the EK the `tpm` join would present (the kind whose certificate the TPM holds, else ECC), then flushes it. */
export async function identifyTpm(tpm: TpmClient): Promise<TpmIdentity> {
  const ek = await createEndorsementKey(tpm, 'auto');
  await tpm.flush(ek.handle);
  let issuer: string | null = null;
  if (ek.certificate) {
    try {
      issuer = new X509Certificate(ek.certificate).issuer.replace(/\n/g, ', ');
    } catch {
      issuer = 'an EK certificate that does not parse';
    }
  }
  return { ekKind: ek.kind, ekHash: ekHashOf(ek.publicArea), ekCertificateIssuer: issuer };
}

/**
 * Opens the TPM `--tpm` or `BCD_TPM` names (`/dev/tpmrm0` when neither), runs `use`, and closes it. A TPM that
 * cannot be opened is an error naming where bcd looked.
 */
export async function withTpm<T>(address: string | undefined, use: (tpm: TpmClient) => Promise<T>): Promise<T> {
  const where = parseTpmAddress(address);
  const named = describeTpmAddress(address);
  let tpm: TpmClient;
  try {
    tpm = await TpmClient.open(where);
  } catch (error) {
    throw new Error(`cannot open the TPM at ${named} (set --tpm or BCD_TPM): ${(error as Error).message}`, { cause: error });
  }
  try {
    await tpm.startup();
    return await use(tpm);
  } finally {
    await tpm.close();
  }
}
