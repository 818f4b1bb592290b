import { z } from 'zod';

/** Limits on what a join may claim; generous for real hardware, small enough to store and show. */
export const CLAIM_LIMITS = { uuid: 64, serial: 128, mac: 32, hostname: 253, macs: 64, gpuUuids: 64, dmiText: 128 } as const;

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Characters no claim may hold: control characters (C0 and C1), format characters (bidirectional overrides and
 * isolates, zero-width joiners, the byte-order mark) and line or paragraph separators. Firmware strings have no
 * use for them; they would garble logs, and would let a claim read in the console other than it is.
 */
export const UNPRINTABLE_CLAIM = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

const printable = (max: number) =>
  z
    .string()
    .max(max)
    .refine((value) => !UNPRINTABLE_CLAIM.test(value), 'contains control or format characters')
    // A lone surrogate cannot be stored as JSON text in PostgreSQL; it is never a real identifier.
    .refine((value) => !LONE_SURROGATE.test(value), 'is not well-formed Unicode');

// Go's encoding/json writes an unset string or slice as null, so null reads as absent.
const absentOr = <T extends z.ZodTypeAny>(schema: T) =>
  schema
    .nullable()
    .transform((value) => value ?? undefined)
    .optional();

/**
 * The wire `claims` of a join: what the machine says about its hardware. Every field is optional and
 * unknown fields are dropped. Values are kept as sent; the normalizers below decide what they mean.
 */
export const hardwareClaimsSchema = z.object({
  productUuid: absentOr(printable(CLAIM_LIMITS.uuid)),
  productSerial: absentOr(printable(CLAIM_LIMITS.serial)),
  boardSerial: absentOr(printable(CLAIM_LIMITS.serial)),
  chassisSerial: absentOr(printable(CLAIM_LIMITS.serial)),
  macs: absentOr(z.array(printable(CLAIM_LIMITS.mac)).max(CLAIM_LIMITS.macs)),
  gpuUuids: absentOr(z.array(printable(CLAIM_LIMITS.uuid)).max(CLAIM_LIMITS.gpuUuids)),
  hostname: absentOr(printable(CLAIM_LIMITS.hostname)),
  /** DMI `sys_vendor` (the system's maker), as read from `/sys/class/dmi/id/sys_vendor`. */
  sysVendor: absentOr(printable(CLAIM_LIMITS.dmiText)),
  /** DMI `product_name` (the model), as read from `/sys/class/dmi/id/product_name`. */
  productName: absentOr(printable(CLAIM_LIMITS.dmiText)),
});

/** Parsed claims, as `hardwareClaimsSchema` returns them. */
export type HardwareClaims = z.output<typeof hardwareClaimsSchema>;

const UUID_DASHED = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UUID_PLAIN = /^[0-9a-f]{32}$/;

/** A UUID as lower-case dashed text; accepts upper case, no dashes and `{…}` braces. Null when not a UUID. */
export function normalizeUuid(value: string | null | undefined): string | null {
  if (typeof value !== 'string') return null;
  let text = value.trim().toLowerCase();
  if (text.startsWith('{') && text.endsWith('}')) text = text.slice(1, -1);
  if (UUID_DASHED.test(text)) return text;
  if (!UUID_PLAIN.test(text)) return null;
  return `${text.slice(0, 8)}-${text.slice(8, 12)}-${text.slice(12, 16)}-${text.slice(16, 20)}-${text.slice(20)}`;
}

// Firmware defaults seen across many machines, in both SMBIOS byte orders.
const PLACEHOLDER_UUIDS = new Set([
  '03000200-0400-0500-0006-000700080009',
  '00020003-0004-0005-0006-000700080009',
  '12345678-1234-5678-90ab-cddeefaabbcc',
  '78563412-3412-7856-90ab-cddeefaabbcc',
]);

/**
 * Whether a UUID is a firmware placeholder: all zeros, all F, one repeated hex digit, or a known vendor
 * default. Input that is not a UUID counts as a placeholder, so it never identifies a machine.
 */
export function isPlaceholderUuid(value: string | null | undefined): boolean {
  const uuid = normalizeUuid(value);
  if (!uuid) return true;
  const hex = uuid.replaceAll('-', '');
  return isOneRepeatedCharacter(hex) || PLACEHOLDER_UUIDS.has(uuid);
}

const PLACEHOLDER_STRINGS = new Set([
  'to be filled by o.e.m.',
  'to be filled by o.e.m',
  'to be filled by oem',
  'default string',
  'default',
  'system serial number',
  'chassis serial number',
  'base board serial number',
  'baseboard serial number',
  'board serial number',
  'serial number',
  'system product name',
  'not specified',
  'not applicable',
  'not available',
  'not present',
  'not settable',
  'unknown',
  'invalid',
  'none',
  'null',
  'empty',
  'n/a',
  'na',
  'oem',
  'o.e.m.',
  '123456789',
  '0123456789',
  '1234567890',
  '12345678',
]);

/**
 * Whether a serial or similar firmware string is a placeholder: empty or blank, one repeated character
 * (`0`, `00000000`, `....`), or a known default such as `To Be Filled By O.E.M.`, `Default string`,
 * `System Serial Number` or `Not Specified`. Case-insensitive; surrounding and repeated blanks are ignored.
 */
export function isPlaceholderString(value: string | null | undefined): boolean {
  if (typeof value !== 'string') return true;
  const text = value.trim().replace(/\s+/g, ' ').toLowerCase();
  if (text.length === 0 || isOneRepeatedCharacter(text.replaceAll(' ', ''))) return true;
  return PLACEHOLDER_STRINGS.has(text);
}

function isOneRepeatedCharacter(text: string): boolean {
  for (let i = 1; i < text.length; i++) if (text[i] !== text[0]) return false;
  return true;
}

const MAC_GROUPS = /^([0-9a-f]+)(?:([^0-9a-z]+)([0-9a-f]+))*$/;

/**
 * A 48-bit MAC as `aa:bb:cc:dd:ee:ff`. Accepts any case and any separator between whole octets, one
 * separator used throughout: `aa:bb:…`, `aa-bb-…`, `aa.bb.…`, `aa bb …`, `aabb.ccdd.eeff`, or twelve bare
 * hex digits. Null when not a MAC (a group splitting an octet, mixed separators, a non-hex letter).
 */
export function normalizeMac(value: string | null | undefined): string | null {
  if (typeof value !== 'string') return null;
  const text = value.trim().toLowerCase();
  if (!MAC_GROUPS.test(text)) return null;
  const groups = text.split(/[^0-9a-f]+/);
  const separators = new Set(text.match(/[^0-9a-f]+/g) ?? []);
  if (separators.size > 1 || groups.some((group) => group.length % 2 !== 0)) return null;
  const hex = groups.join('');
  if (hex.length !== 12) return null;
  return hex.match(/../g)!.join(':');
}

/**
 * Whether a MAC is a permanent, globally administered unicast address: not locally administered (bit 0x02
 * of the first octet), not multicast or broadcast (bit 0x01), not all zero. False for anything not a MAC.
 */
export function isPermanentGlobalMac(value: string | null | undefined): boolean {
  const mac = normalizeMac(value);
  if (!mac) return false;
  const first = Number.parseInt(mac.slice(0, 2), 16);
  return (first & 0x03) === 0 && mac !== '00:00:00:00:00:00';
}

/**
 * An NVIDIA GPU UUID as `GPU-` + lower-case dashed UUID, so comparisons ignore case. Accepts any case of
 * the prefix and a dashed or undashed UUID after it. Null for anything else (MIG device ids included).
 */
export function normalizeGpuUuid(value: string | null | undefined): string | null {
  if (typeof value !== 'string') return null;
  const text = value.trim();
  if (text.slice(0, 4).toUpperCase() !== 'GPU-') return null;
  const uuid = normalizeUuid(text.slice(4));
  return uuid ? `GPU-${uuid}` : null;
}

/** A serial's comparison form: trimmed and lower case. Null when absent or a placeholder. */
export function normalizeSerial(value: string | null | undefined): string | null {
  if (typeof value !== 'string' || isPlaceholderString(value)) return null;
  return value.trim().toLowerCase();
}

/** The identifier fields a hardware key is derived from; other claim fields (hostname) are ignored. */
export interface HardwareIdentifiers {
  readonly productUuid?: string | null;
  readonly productSerial?: string | null;
  readonly boardSerial?: string | null;
  readonly chassisSerial?: string | null;
  readonly macs?: readonly string[] | null;
  readonly gpuUuids?: readonly string[] | null;
}
