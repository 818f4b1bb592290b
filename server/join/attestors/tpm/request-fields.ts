import { tpmRequestFactsSchema } from '../../../../protocol/api/join-request-schemas';
import type { JoinRequestRow } from '../../../requests/records';
import type { AttestorRequestFields } from '../hooks';

/**
 * What the queue shows of a tpm enrollment: its facts (the stored `tpm` column; anything unreadable is shown as
 * absent rather than failing the list) and whether its EK chains to a vendor root (`ek_certified`).
 */
export function tpmRequestFields(row: JoinRequestRow): AttestorRequestFields {
  const parsed = tpmRequestFactsSchema.safeParse(row.tpm);
  return { tpm: parsed.success ? parsed.data : null, ekCertified: row.ek_certified === true };
}
