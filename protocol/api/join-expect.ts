import { DomainError } from '../errors';
import {
  isPermanentGlobalMac,
  isPlaceholderString,
  isPlaceholderUuid,
  normalizeGpuUuid,
  normalizeMac,
  normalizeSerial,
  normalizeUuid,
  type HardwareIdentifiers,
} from '../hardware-claims';

/** A token's `expect` binding, as stored: every present field is already normalized. */
export interface JoinExpect {
  readonly productUuid?: string;
  readonly serial?: string;
  readonly mac?: string;
  readonly gpuUuid?: string;
}

/** `expect` as a caller supplies it when creating a token. */
export interface JoinExpectInput {
  readonly productUuid?: string | null;
  readonly serial?: string | null;
  readonly mac?: string | null;
  readonly gpuUuid?: string | null;
}

const MAC_COLONS = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/i;
const invalid = (field: string, message: string) =>
  new DomainError('INVALID_ARGUMENT', `expect.${field}: ${message}`, { field: `expect.${field}` });

function text(input: JoinExpectInput, field: keyof JoinExpectInput): string | undefined {
  const value = input[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid(field, 'must be a string');
  return value;
}

/**
 * Validates and normalizes a token's `expect` when the token is created; the result is what is stored
 * and compared. Null when `input` is absent. Refused (`INVALID_ARGUMENT`, `field` `expect.<name>`):
 * `productUuid` not a UUID or a placeholder; `serial` blank, over 128 characters or a placeholder;
 * `mac` not `aa:bb:cc:dd:ee:ff` (any case; stored lower case) or not permanent and globally administered;
 * `gpuUuid` not `GPU-` followed by a UUID. Identifiers that could never match are refused here rather
 * than minting a token no machine can use. At least one identifier is required (`expect`).
 */
export function normalizeExpect(input: JoinExpectInput | null | undefined): JoinExpect | null {
  if (input === undefined || input === null) return null;
  if (typeof input !== 'object') throw new DomainError('INVALID_ARGUMENT', 'expect: must be an object', { field: 'expect' });
  const out: { productUuid?: string; serial?: string; mac?: string; gpuUuid?: string } = {};

  const productUuid = text(input, 'productUuid');
  if (productUuid !== undefined) {
    const uuid = normalizeUuid(productUuid);
    if (!uuid) throw invalid('productUuid', 'must be a UUID');
    if (isPlaceholderUuid(uuid)) throw invalid('productUuid', 'is a firmware placeholder and never matches');
    out.productUuid = uuid;
  }
  const serial = text(input, 'serial');
  if (serial !== undefined) {
    const trimmed = serial.trim();
    if (trimmed.length === 0 || trimmed.length > 128) throw invalid('serial', 'must be 1 to 128 characters');
    if (isPlaceholderString(trimmed)) throw invalid('serial', 'is a firmware placeholder and never matches');
    out.serial = trimmed;
  }
  const mac = text(input, 'mac');
  if (mac !== undefined) {
    if (!MAC_COLONS.test(mac)) throw invalid('mac', 'must be aa:bb:cc:dd:ee:ff');
    if (!isPermanentGlobalMac(mac)) throw invalid('mac', 'must be a globally administered unicast MAC');
    out.mac = mac.toLowerCase();
  }
  const gpuUuid = text(input, 'gpuUuid');
  if (gpuUuid !== undefined) {
    const normalized = gpuUuid.startsWith('GPU-') ? normalizeGpuUuid(gpuUuid) : null;
    if (!normalized) throw invalid('gpuUuid', 'must be GPU- followed by a UUID');
    out.gpuUuid = normalized;
  }
  if (Object.keys(out).length === 0) {
    throw new DomainError('INVALID_ARGUMENT', 'expect: name at least one identifier', { field: 'expect' });
  }
  return out;
}

/**
 * Whether claims satisfy a token's `expect` (joining.md, "Binding a token to one machine"): every named
 * identifier must be among the claims, compared after normalization. A placeholder never matches on
 * either side; `serial` matches the product, board or chassis serial case-insensitively; `mac` matches
 * only a permanent, globally administered MAC whatever its separators and case; `gpuUuid` ignores case.
 * An `expect` that names nothing matches nothing, so a malformed binding fails closed.
 */
export function matchesExpect(expect: JoinExpectInput, claims: HardwareIdentifiers): boolean {
  return mismatchedExpectField(expect, claims) === null;
}

/**
 * The first `expect` field the claims do not satisfy (productUuid, serial, mac, gpuUuid in that order), or
 * `expect` itself when it names no identifier; null when every named identifier is among the claims. Only the
 * field's name leaves here, for the refusal event: never the expected or the claimed value.
 */
export function mismatchedExpectField(
  expect: JoinExpectInput,
  claims: HardwareIdentifiers,
): 'productUuid' | 'serial' | 'mac' | 'gpuUuid' | 'expect' | null {
  let named = 0;
  if (expect.productUuid != null) {
    named++;
    const wanted = normalizeUuid(expect.productUuid);
    if (!wanted || isPlaceholderUuid(wanted) || normalizeUuid(claims.productUuid) !== wanted) return 'productUuid';
  }
  if (expect.serial != null) {
    named++;
    const wanted = normalizeSerial(expect.serial);
    const serials = [claims.productSerial, claims.boardSerial, claims.chassisSerial].map(normalizeSerial);
    if (!wanted || !serials.includes(wanted)) return 'serial';
  }
  if (expect.mac != null) {
    named++;
    const wanted = normalizeMac(expect.mac);
    if (!wanted || !isPermanentGlobalMac(wanted)) return 'mac';
    const macs = (claims.macs ?? []).filter(isPermanentGlobalMac).map(normalizeMac);
    if (!macs.includes(wanted)) return 'mac';
  }
  if (expect.gpuUuid != null) {
    named++;
    const wanted = normalizeGpuUuid(expect.gpuUuid);
    if (!wanted || isPlaceholderUuid(wanted.slice(4))) return 'gpuUuid';
    if (!(claims.gpuUuids ?? []).some((gpu) => normalizeGpuUuid(gpu) === wanted)) return 'gpuUuid';
  }
  return named > 0 ? null : 'expect';
}
