import { createHash } from 'node:crypto';
import {
  isPermanentGlobalMac,
  isPlaceholderUuid,
  normalizeGpuUuid,
  normalizeMac,
  normalizeSerial,
  normalizeUuid,
  type HardwareIdentifiers,
} from '../../../protocol/hardware-claims';

/** A machine's hardware key and how much it can be trusted. */
export interface HardwareKey {
  /** SHA-256 of the canonical encoding below; null when no identifier survived. */
  readonly key: Buffer | null;
  /** At least two independent identifiers survived. */
  readonly trusted: boolean;
  /** How many distinct identifiers survived. */
  readonly identifiers: number;
  /** A product UUID or at least one serial survived. */
  readonly hasUuidOrSerial: boolean;
}

// One octet per kind, in the order entries sort.
const KIND = { productUuid: 1, serial: 2, mac: 3, gpuUuid: 4 } as const;
const DOMAIN = Buffer.from('bc-hardware-key\u0000v1\u0000', 'ascii');

/**
 * Derives the hardware key from claims (or inventory), as the same function both JoinService and the
 * Inventory controller use. Placeholder values are dropped first (placeholder UUIDs and serials,
 * non-permanent or locally administered MACs, anything malformed), then the survivors are normalized:
 *
 * - product UUID: lower-case dashed UUID;
 * - serials (product, board, chassis): trimmed and lower-cased; equal serials are one identifier, so a
 *   board that repeats its product serial does not count twice;
 * - MACs: `aa:bb:cc:dd:ee:ff`, deduplicated;
 * - GPU UUIDs: `GPU-` + lower-case dashed UUID, deduplicated.
 *
 * Canonical encoding (v1): the ASCII domain `bc-hardware-key\0v1\0`, then each identifier as one kind
 * octet (1 product UUID, 2 serial, 3 MAC, 4 GPU UUID), a 2-byte big-endian length and the UTF-8 value,
 * entries sorted by kind and then by value bytes. `key` is the SHA-256 of that encoding, so it does not
 * depend on input order, case or MAC separators. The key is `trusted` when at least two identifiers survive.
 */
export function deriveHardwareKey(claims: HardwareIdentifiers): HardwareKey {
  const entries = new Map<string, { kind: number; value: Buffer }>();
  const add = (kind: number, value: string | null) => {
    if (value === null) return;
    const bytes = Buffer.from(value, 'utf8');
    // The length prefix is two octets; nothing real comes close (claims cap serials at 128 characters).
    if (bytes.length <= 0xffff) entries.set(`${kind}:${value}`, { kind, value: bytes });
  };

  const uuid = normalizeUuid(claims.productUuid);
  if (uuid && !isPlaceholderUuid(uuid)) add(KIND.productUuid, uuid);
  for (const serial of [claims.productSerial, claims.boardSerial, claims.chassisSerial]) {
    add(KIND.serial, normalizeSerial(serial));
  }
  for (const mac of claims.macs ?? []) {
    if (isPermanentGlobalMac(mac)) add(KIND.mac, normalizeMac(mac));
  }
  for (const gpu of claims.gpuUuids ?? []) {
    const normalized = normalizeGpuUuid(gpu);
    if (normalized && !isPlaceholderUuid(normalized.slice(4))) add(KIND.gpuUuid, normalized);
  }

  const sorted = [...entries.values()].sort((a, b) => a.kind - b.kind || Buffer.compare(a.value, b.value));
  const identifiers = sorted.length;
  const hasUuidOrSerial = sorted.some((entry) => entry.kind === KIND.productUuid || entry.kind === KIND.serial);
  if (identifiers === 0) return { key: null, trusted: false, identifiers, hasUuidOrSerial };

  const hash = createHash('sha256').update(DOMAIN);
  for (const { kind, value } of sorted) {
    const header = Buffer.alloc(3);
    header[0] = kind;
    header.writeUInt16BE(value.length, 1);
    hash.update(header).update(value);
  }
  return { key: hash.digest(), trusted: identifiers >= 2, identifiers, hasUuidOrSerial };
}
