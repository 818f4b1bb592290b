import {
  isPermanentGlobalMac,
  isPlaceholderUuid,
  normalizeGpuUuid,
  normalizeMac,
  normalizeSerial,
  normalizeUuid,
} from '../../protocol/hardware-claims';

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
}
interface RejectedRow {
  row: number;
  reason: string;
}

const FIELDS = ['serial', 'productUuid', 'mac', 'gpuUuid', 'pool', 'hostname', 'expiresAt'] as const;
const ALIASES: Record<string, (typeof FIELDS)[number]> = {
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
};

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
    return { records: parsed.map((r) => (r && typeof r === 'object' && !Array.isArray(r) ? (r as Record<string, unknown>) : {})) };
  }
  const lines = content.split(/\r?\n/).filter((l) => l.trim() !== '');
  if (!lines.length) return { records: [] };
  const header = splitCsvLine(lines[0]!).map((h) => ALIASES[h.toLowerCase()] ?? h);
  return {
    records: lines.slice(1).map((line) => Object.fromEntries(splitCsvLine(line).map((v, i) => [header[i] ?? `column${i + 1}`, v]))),
  };
}

const text = (v: unknown) => (typeof v === 'string' && v.trim() !== '' ? v.trim() : typeof v === 'number' ? String(v) : null);

/**
 * Parses an import: every row names at least one identifier (serial, product UUID, MAC, GPU UUID), each in
 * a form that can match (a permanent MAC, a real UUID, no firmware placeholder), and a pool unless the
 * import gives a default. Rows are numbered from 1 (the first data row); a rejected row says why.
 */
export function parseExpectedMachines(
  format: 'csv' | 'json',
  content: string,
  knownPools: ReadonlySet<string>,
  defaultPoolId: string | null,
) {
  const { records, error } = recordsOf(format, content);
  const accepted: ExpectedRow[] = [];
  const rejected: RejectedRow[] = [];
  if (error) return { accepted, rejected, error };
  records.forEach((raw, index) => {
    const row = index + 1;
    const r = Object.fromEntries(Object.entries(raw).map(([k, v]) => [ALIASES[k.toLowerCase()] ?? k, v]));
    const unknown = Object.keys(r).filter((k) => !(FIELDS as readonly string[]).includes(k) && text(r[k]) !== null);
    if (unknown.length) return rejected.push({ row, reason: `unknown field ${unknown[0]}` });
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
    const poolId = text(r.pool) ?? defaultPoolId;
    if (!poolId) return rejected.push({ row, reason: 'pool: missing, and the import names no default pool' });
    if (!knownPools.has(poolId)) return rejected.push({ row, reason: `pool: ${poolId} is not a live bcd pool of this site` });
    const hostname = text(r.hostname);
    if (hostname && (hostname.length > 253 || /[\u0000-\u001f\u007f]/.test(hostname)))
      return rejected.push({ row, reason: 'hostname: at most 253 printable characters' });
    const expiresText = text(r.expiresAt);
    const expiresAt = expiresText ? new Date(expiresText) : null;
    if (expiresAt && Number.isNaN(expiresAt.getTime())) return rejected.push({ row, reason: 'expiresAt: not a date' });
    accepted.push({ row, serial, productUuid, mac, gpuUuid, poolId, hostname, expiresAt: expiresAt?.toISOString() ?? null });
  });
  return { accepted, rejected };
}
