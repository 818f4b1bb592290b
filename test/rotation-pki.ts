import { createPublicKey } from 'node:crypto';
import { spkiPin } from '../protocol/pins';
import type { PkiRuntime } from '../server/join/join-runtime';
import { createPkiBundle, type PkiBundle } from '../server/pki/bundle/bundle';
import { joinCryptoFromBundle, type JoinCrypto } from '../server/pki/issuance/join-crypto';
import { installPins } from '../server/pki/pins-summary';
import { crossCertify } from '../server/pki/rotation/cross-certificate';
import { trustStateOf } from '../server/pki/rotation/trust-state';

/** Where a test's rotation of the serving CA and the node CA stands (both move together here). */
type RotationPhase = 'before' | 'prepared' | 'activated' | 'retired';

/** A PKI at run time that a test moves through a rotation, as the PKI source would after each step. */
export interface RotatingPki {
  /** The keys before the rotation, and the new serving CA and node CA (`next.servingCa`, `next.nodeCa`). */
  old: PkiBundle;
  next: PkiBundle;
  oldCrypto: JoinCrypto;
  nextCrypto: JoinCrypto;
  pins: { oldServingCa: string; nextServingCa: string };
  /** What to hand createServices as `pki`: it answers the runtime of the current phase. */
  pki: { load(): Promise<PkiRuntime | null>; loadCrypto(): Promise<JoinCrypto | null> };
  phase: RotationPhase;
  runtime(): PkiRuntime;
}

/**
 * Two PKIs and a runtime that rotates from the first's serving CA and node CA to the second's: `before` trusts
 * the old ones (version 1), `prepared` trusts both and uses the old (2), `activated` trusts both and uses the
 * new (3; the gateways' chain then holds the new CA certified by the old one, as after a real activation), `retired`
 * trusts only the new (4). The join keys stay the old bundle's throughout.
 */
export function createRotatingPki(trustDomain = 'test.example.com'): RotatingPki {
  const old = createPkiBundle({ trustDomain });
  const next = createPkiBundle({ trustDomain });
  const oldCrypto = joinCryptoFromBundle(old);
  const nextCrypto = joinCryptoFromBundle(next);
  const pins = { oldServingCa: installPins(old).servingCaPin, nextServingCa: installPins(next).servingCaPin };
  const base = trustStateOf({ crypto: oldCrypto, servingCaPin: pins.oldServingCa });
  const nodeCa = (crypto: JoinCrypto) => ({ pin: spkiPin(createPublicKey(crypto.nodeCa.key)), certificate: crypto.nodeCaCertificate });
  const runtimes: Record<RotationPhase, PkiRuntime> = {
    before: { crypto: oldCrypto, servingCaPin: pins.oldServingCa, servingCa: old.servingCa, trust: base },
    prepared: {
      crypto: oldCrypto,
      servingCaPin: pins.oldServingCa,
      servingCa: old.servingCa,
      trust: {
        ...base,
        version: 2,
        servingCaPins: [pins.oldServingCa, pins.nextServingCa],
        nodeCas: [nodeCa(oldCrypto), nodeCa(nextCrypto)],
      },
    },
    activated: {
      crypto: oldCrypto,
      servingCaPin: pins.nextServingCa,
      servingCa: next.servingCa,
      // The gateways send the new serving CA certified by the old one, then the old one, after their leaf.
      servingCaChain: [crossCertify(next.servingCa, old.servingCa), old.servingCa.certificatePem],
      trust: {
        ...base,
        version: 3,
        servingCaPins: [pins.nextServingCa, pins.oldServingCa],
        nodeCas: [nodeCa(nextCrypto), nodeCa(oldCrypto)],
      },
    },
    retired: {
      crypto: oldCrypto,
      servingCaPin: pins.nextServingCa,
      servingCa: next.servingCa,
      trust: { ...base, version: 4, servingCaPins: [pins.nextServingCa], nodeCas: [nodeCa(nextCrypto)] },
    },
  };
  const rotating: RotatingPki = {
    old,
    next,
    oldCrypto,
    nextCrypto,
    pins,
    phase: 'before',
    runtime: () => runtimes[rotating.phase],
    pki: { load: async () => rotating.runtime(), loadCrypto: async () => rotating.runtime().crypto },
  };
  return rotating;
}
