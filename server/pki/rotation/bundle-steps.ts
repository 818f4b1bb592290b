import { X509Certificate } from 'node:crypto';
import { DomainError } from '../../../protocol/errors';
import type { PkiBundle, PkiCertifiedKey, PkiRotatingKey } from '../bundle/bundle';
import { PKI_KEY_LABELS, type PkiKeyKind } from './kinds';
import { crossCertify } from './cross-certificate';
import { currentKeyOf } from './new-key';

/** The trust version of a bundle: 1 before any rotation step. */
export const trustVersionOf = (bundle: PkiBundle): number => bundle.trustVersion ?? 1;

const der64 = (pem: string) => new X509Certificate(pem).raw.toString('base64');

function withKey(bundle: PkiBundle, kind: PkiKeyKind, key: Omit<PkiRotatingKey, 'phase'>): PkiBundle {
  const pair = (): PkiCertifiedKey => ({ certificatePem: key.certificatePem!, privateKeyPem: key.privateKeyPem });
  switch (kind) {
    case 'serving-ca':
      return { ...bundle, servingCa: pair() };
    case 'node-ca':
      return { ...bundle, nodeCa: pair() };
    case 'command-signing':
      return { ...bundle, commandCa: pair() };
    case 'join-signing':
      return { ...bundle, signingKey: pair() };
    case 'join-encryption':
      return { ...bundle, encryptionKey: { privateKeyPem: key.privateKeyPem } };
  }
}

function withRotation(bundle: PkiBundle, kind: PkiKeyKind, other: PkiRotatingKey | undefined): PkiBundle {
  const rotations = { ...bundle.rotations };
  if (other) rotations[kind] = other;
  else delete rotations[kind];
  const next: PkiBundle = { ...bundle, trustVersion: trustVersionOf(bundle) + 1 };
  if (Object.keys(rotations).length) next.rotations = rotations;
  else delete next.rotations;
  return next;
}

/**
 * The command trust bundle with the command CA in use first and the other command CA (if any) second; any
 * other certificate an older bundle listed keeps its place after them.
 */
function commandTrustBundle(bundle: PkiBundle): string[] {
  const current = der64(bundle.commandCa.certificatePem);
  const otherPem = bundle.rotations?.['command-signing']?.certificatePem;
  const other = otherPem ? der64(otherPem) : null;
  const rest = bundle.commandTrustBundle.filter((c) => c !== current && c !== other);
  return [current, ...(other ? [other] : []), ...rest];
}

const refuse = (message: string) => new DomainError('INVALID_STATE', message);

/** `bundle` with `next` prepared for `kind`: trusted, not used. Version + 1. */
export function prepareInBundle(bundle: PkiBundle, kind: PkiKeyKind, next: PkiRotatingKey): PkiBundle {
  const under = bundle.rotations?.[kind];
  if (under)
    throw refuse(
      `A ${PKI_KEY_LABELS[kind]} rotation is already ${under.phase}; ${under.phase === 'prepared' ? 'activate' : 'retire'} it first`,
    );
  const prepared = withRotation(bundle, kind, { ...next, phase: 'prepared' });
  if (kind === 'command-signing') prepared.commandTrustBundle = commandTrustBundle(prepared);
  return prepared;
}

/**
 * `bundle` with the prepared `kind` key in use and the previous one kept as the other key. Version + 1. For the
 * serving CA, the previous CA also certifies the new one (`crossCertificatePem`), which the gateways send until
 * the retirement.
 */
export function activateInBundle(bundle: PkiBundle, kind: PkiKeyKind): PkiBundle {
  const prepared = bundle.rotations?.[kind];
  if (prepared?.phase !== 'prepared') throw refuse(`No ${PKI_KEY_LABELS[kind]} is prepared: prepare one first`);
  const previous = currentKeyOf(bundle, kind);
  const cross =
    kind === 'serving-ca' ? { crossCertificatePem: crossCertify({ certificatePem: prepared.certificatePem! }, bundle.servingCa) } : {};
  const swapped = withRotation(withKey(bundle, kind, prepared), kind, { ...previous, ...cross, phase: 'active' });
  if (kind === 'command-signing') swapped.commandTrustBundle = commandTrustBundle(swapped);
  return swapped;
}

/** `bundle` without the previous `kind` key: trusted nowhere. Version + 1. */
export function retireInBundle(bundle: PkiBundle, kind: PkiKeyKind): PkiBundle {
  const active = bundle.rotations?.[kind];
  if (active?.phase !== 'active') throw refuse(`No ${PKI_KEY_LABELS[kind]} rotation is active: activate one first`);
  const retired = withRotation(bundle, kind, undefined);
  if (kind === 'command-signing') {
    const dropped = der64(active.certificatePem!);
    retired.commandTrustBundle = commandTrustBundle(retired).filter((c) => c !== dropped);
  }
  return retired;
}
