import {
  isPermanentGlobalMac,
  isPlaceholderUuid,
  normalizeGpuUuid,
  normalizeMac,
  normalizeSerial,
  normalizeUuid,
} from '../../protocol/hardware-claims';
import { labelsSchema, mergeLabels, parseLabelList } from '../../protocol/api/labels';

/** One expected machine, in comparison form. */
interface ExpectedRow {
  row: number;
  serial: string | null;
  productUuid: string | null;
  mac: string | null;
  gpuUuid: string | null;
  poolId: string | null;
  hostname: string | null;
  expiresAt: string | null;
  /** The import's labels with the row's over them. */
  labels: Record<string, string>;
}
interface RejectedRow {
  row: number;
  reason: string;
}

/** A pool a row may name (by name or id), and why it is not one rows can join when it is not. */
export interface PoolChoice {
  id: string;
  name: string;
  /** null: a live bcd pool of this site; else what makes it unusable, in words. */
  unusable: string | null;
}

const FIELDS = ['serial', 'productUuid', 'mac', 'gpuUuid', 'pool', 'hostname', 'expiresAt', 'labels'] as const;
type Field = (typeof FIELDS)[number];
/**
 * Keys that name an object's prototype machinery. They are never fields: refused like any unknown key (whatever
 * their value), and never looked up in a plain object (`ALIASES['constructor']` would be `Object`).
 */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
const ALIASES = new Map<string, Field>(
  Object.entries({
    serial: 'serial',
    productuuid: 'productUuid',
    product_uuid: 'productUuid',
    uuid: 'productUuid',
    mac: 'mac',
    gpuuuid: 'gpuUuid',
    gpu_uuid: 'gpuUuid',
    pool: 'pool',
    poolid: 'pool',
    pool_id: 'pool',
    hostname: 'hostname',
    expiresat: 'expiresAt',
    expires_at: 'expiresAt',
    expires: 'expiresAt',
    labels: 'labels',
  } satisfies Record<string, Field>),
);
/** The field a header or key names (case-insensitive, with its aliases), or the key itself. */
const fieldOf = (key: string): string => ALIASES.get(key.toLowerCase()) ?? key;

/** A CSV line split on commas, honouring double quotes ("a, b" and "" inside quotes). */
function splitCsvLine(line: string): string[] {
  const out: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      out.push(cell);
      cell = '';
    } else cell += ch;
  }
  out.push(cell);
  return out.map((c) => c.trim());
}

/** A record with no prototype: its keys are only what the input named. */
function record(entries: Iterable<readonly [string, unknown]>): Record<string, unknown> {
  const out = Object.create(null) as Record<string, unknown>;
  // With no prototype in the chain there is no `__proto__` setter: every key is an own data property.
  for (const [key, value] of entries) out[key] = value;
  return out;
}

/** The records of a CSV (a header row naming the fields) or a JSON array of objects. */
function recordsOf(format: 'csv' | 'json', content: string): { records: Record<string, unknown>[]; error?: string } {
  if (format === 'json') {
    let parsed: unknown;
    try {
      parsed = JSON.parse(content);
    } catch {
      return { records: [], error: 'content: not JSON' };
    }
    if (!Array.isArray(parsed)) return { records: [], error: 'content: a JSON array of objects' };
    // JSON.parse makes `__proto__` an own key (it never sets the prototype); Object.entries reads it as one.
    return {
      records: parsed.map((r) => (r && typeof r === 'object' && !Array.isArray(r) ? record(Object.entries(r as object)) : record([]))),
    };
  }
  const lines = content.split(/\r?\n/).filter((l) => l.trim() !== '');
  if (!lines.length) return { records: [] };
  const header = splitCsvLine(lines[0]!);
  return {
    records: lines.slice(1).map((line) => record(splitCsvLine(line).map((v, i) => [header[i] ?? `column${i + 1}`, v] as const))),
  };
}

const text = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim() : typeof v === 'number' ? String(v) : null);
/** A value that says nothing: absent, null or blank (a CSV's empty column). */
const isBlank = (v: unknown) => v === undefined || v === null || (typeof v === 'string' && v.trim() === '');
/** A key as a reason shows it: quoted, at most 40 characters, control characters escaped. */
const shown = (key: string) => JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key);

const LABELS_EXPECTED = 'expected key=value pairs separated by ";" (rack=c7;env=prod), or in JSON an object of strings';

/**
 * A row's labels: `k=v;k2=v2` (a CSV cell; JSON may give that text or an object of strings), over the
 * import's; the merged set must stay within labelsSchema's bounds.
 */
function rowLabels(value: unknown, importLabels: Record<string, string>): { labels: Record<string, string> } | { reason: string } {
  let own: Record<string, string> = {};
  if (typeof value === 'string') {
    const parsed = parseLabelList(value);
    if ('invalid' in parsed) return { reason: `labels: ${shown(parsed.invalid)} is not key=value; ${LABELS_EXPECTED}` };
    own = parsed.labels;
  } else if (value && typeof value === 'object' && !Array.isArray(value)) {
    // Checked before merging, so a key such as `__proto__` is refused rather than lost in the merge.
    const checked = labelsSchema.safeParse(value);
    if (!checked.success) return { reason: `labels: ${checked.error.issues[0]?.message ?? 'invalid'}; ${LABELS_EXPECTED}` };
    own = checked.data;
  } else if (!isBlank(value)) return { reason: `labels: ${LABELS_EXPECTED}` };
  const merged = labelsSchema.safeParse(mergeLabels(importLabels, own));
  if (!merged.success) return { reason: `labels: ${merged.error.issues[0]?.message ?? 'invalid'}; ${LABELS_EXPECTED}` };
  return { labels: merged.data };
}

/**
 * The pool a row names (by id or name), or why it names none this import can use; the reason says what was
 * expected.
 */
export function resolvePool(value: string, pools: readonly PoolChoice[], siteName: string): { poolId: string } | { reason: string } {
  const pool = pools.find((p) => p.id === value) ?? pools.find((p) => p.name === value);
  const expected = 'expected the name or id of a pool of this site that runs bcd';
  if (!pool) return { reason: `pool: ${shown(value)} is not a pool of site ${siteName}; ${expected}` };
  if (pool.unusable) return { reason: `pool: ${shown(value)} ${pool.unusable}; ${expected}` };
  return { poolId: pool.id };
}

/**
 * Parses an import: every row names at least one identifier (serial, product UUID, MAC, GPU UUID), each in
 * a form that can match (a permanent MAC, a real UUID, no firmware placeholder), and a pool (by name or id)
 * unless the import gives a default. Keys other than the fields (and their aliases) are refused when they hold
 * a value; `__proto__`, `constructor` and `prototype` always. Rows are numbered from 1 (the first data row); a
 * rejected row says why and what was expected.
 */
export function parseExpectedMachines(
  format: 'csv' | 'json',
  content: string,
  pools: readonly PoolChoice[],
  defaultPoolId: string | null,
  siteName: string,
  importLabels: Record<string, string> = {},
) {
  const { records, error } = recordsOf(format, content);
  const accepted: ExpectedRow[] = [];
  const rejected: RejectedRow[] = [];
  if (error) return { accepted, rejected, error };
  records.forEach((raw, index) => {
    const row = index + 1;
    const unknown = Object.keys(raw).filter(
      (k) => PROTOTYPE_KEYS.has(k.toLowerCase()) || (!(FIELDS as readonly string[]).includes(fieldOf(k)) && !isBlank(raw[k])),
    );
    if (unknown.length)
      return rejected.push({
        row,
        reason: `unknown field ${shown(unknown[0]!)}; expected only ${FIELDS.join(', ')}`,
      });
    const r = record(Object.entries(raw).map(([k, v]) => [fieldOf(k), v] as const));
    const notText = FIELDS.find((f) => f !== 'labels' && !isBlank(r[f]) && text(r[f]) === null);
    if (notText)
      return rejected.push({ row, reason: `${notText}: expected text, not ${Array.isArray(r[notText]) ? 'a list' : typeof r[notText]}` });
    const serialText = text(r.serial);
    const serial = serialText ? normalizeSerial(serialText) : null;
    if (serialText && !serial) return rejected.push({ row, reason: 'serial: a firmware placeholder never matches' });
    const uuidText = text(r.productUuid);
    const productUuid = uuidText ? normalizeUuid(uuidText) : null;
    if (uuidText && (!productUuid || isPlaceholderUuid(productUuid)))
      return rejected.push({ row, reason: 'productUuid: not a UUID a machine can have' });
    const macText = text(r.mac);
    const mac = macText ? normalizeMac(macText) : null;
    if (macText && (!mac || !isPermanentGlobalMac(mac)))
      return rejected.push({ row, reason: 'mac: not a permanent, globally administered MAC' });
    const gpuText = text(r.gpuUuid);
    const gpuUuid = gpuText ? normalizeGpuUuid(gpuText) : null;
    if (gpuText && !gpuUuid) return rejected.push({ row, reason: 'gpuUuid: expected GPU-<uuid>' });
    if (!serial && !productUuid && !mac && !gpuUuid)
      return rejected.push({ row, reason: 'names no identifier (serial, productUuid, mac or gpuUuid)' });
    const poolText = text(r.pool);
    if (!poolText && !defaultPoolId)
      return rejected.push({ row, reason: 'pool: missing, and the import names no default pool; expected a pool name or id' });
    const pool = poolText ? resolvePool(poolText, pools, siteName) : { poolId: defaultPoolId! };
    if ('reason' in pool) return rejected.push({ row, reason: pool.reason });
    const { poolId } = pool;
    const hostname = text(r.hostname);
    if (hostname && (hostname.length > 253 || /[\u0000-\u001f\u007f]/.test(hostname)))
      return rejected.push({ row, reason: 'hostname: at most 253 printable characters' });
    const expiresText = text(r.expiresAt);
    const expiresAt = expiresText ? new Date(expiresText) : null;
    if (expiresAt && Number.isNaN(expiresAt.getTime())) return rejected.push({ row, reason: 'expiresAt: not a date' });
    const labels = rowLabels(r.labels, importLabels);
    if ('reason' in labels) return rejected.push({ row, reason: labels.reason });
    accepted.push({
      row,
      serial,
      productUuid,
      mac,
      gpuUuid,
      poolId,
      hostname,
      expiresAt: expiresAt?.toISOString() ?? null,
      labels: labels.labels,
    });
  });
  return { accepted, rejected };
}
