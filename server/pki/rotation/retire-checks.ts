import type { Tx } from '../../db/client';
import { GATEWAY_SEEN_WINDOW_SECONDS, gatewaysOnServingCa } from '../../gateway-credentials/gateway-calls';
import type { PkiKeyKind } from './kinds';
import { liveCertificatesOf } from './rotation-sql';

/** Why retiring would strand machines, and what a forced retirement audits. */
interface RetireRefusal {
  message: string;
  details: Record<string, number>;
}

/** At most this many gateway names in a refusal. */
const NAMES_SHOWN = 5;

/**
 * What retiring the previous `kind` key (`previousPin`) would strand, or null when nothing: for the node CA, its
 * valid, unrevoked certificates; for the serving CA, gateways seen within the last minute that still vouch with
 * its leaf (their next credentials call would be refused, so they could never fetch the new CA's leaf).
 */
export async function retireRefusal(tx: Tx, kind: PkiKeyKind, previousPin: string): Promise<RetireRefusal | null> {
  if (kind === 'node-ca') {
    const live = await liveCertificatesOf(tx, previousPin);
    if (live === 0) return null;
    return {
      message: `The previous node CA still has ${live} valid certificate(s); wait until they are renewed and expire, or retire with --force --reason`,
      details: { liveCertificates: live },
    };
  }
  if (kind === 'serving-ca') {
    const gateways = await gatewaysOnServingCa(tx, previousPin);
    if (gateways.count === 0) return null;
    const shown = gateways.names.slice(0, NAMES_SHOWN).join(', ');
    const more = gateways.names.length > NAMES_SHOWN ? ', …' : '';
    return {
      message:
        `${gateways.count} gateway(s) seen in the last ${GATEWAY_SEEN_WINDOW_SECONDS} seconds still serve a leaf of the previous ` +
        `serving CA (last seen ${gateways.lastSeen!.toISOString()}${shown ? `; ${shown}${more}` : ''}); they fetch the new CA's leaf ` +
        'within seconds when they reach the API: wait, or retire with --force --reason',
      details: { gatewaysOnPrevious: gateways.count },
    };
  }
  return null;
}
