/** The time ranges the audit page offers, as `?range=`; `custom` reads `?from=` and `?to=` (local date-times). */
export const AUDIT_RANGES = [
  { value: '1h', label: 'Last hour', ms: 3_600_000 },
  { value: '24h', label: 'Last 24 hours', ms: 86_400_000 },
  { value: '7d', label: 'Last 7 days', ms: 7 * 86_400_000 },
  { value: '30d', label: 'Last 30 days', ms: 30 * 86_400_000 },
] as const;

interface AuditRangeParams {
  range: string | null;
  from: string | null;
  to: string | null;
}

/** A `datetime-local` value (the viewer's local time) as an ISO instant; null when empty or not a date. */
function localToIso(value: string | null): string | null {
  if (!value) return null;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** The `since`/`until` of the chosen range, as of `now` (a preset counts back from when it was chosen). */
export function rangeBounds(params: AuditRangeParams, now: number): { since?: string; until?: string } {
  if (params.range === 'custom') {
    const since = localToIso(params.from);
    const until = localToIso(params.to);
    return { ...(since ? { since } : {}), ...(until ? { until } : {}) };
  }
  const preset = AUDIT_RANGES.find((r) => r.value === params.range);
  return preset ? { since: new Date(now - preset.ms).toISOString() } : {};
}

/** The export's URL: the REST route with the same filters as the list on screen. */
export function auditExportHref(tenantId: string, filters: Record<string, string | undefined>): string {
  const query = new URLSearchParams(Object.entries(filters).filter((e): e is [string, string] => Boolean(e[1])));
  const qs = query.toString();
  return `/api/compute/v1/tenants/${encodeURIComponent(tenantId)}/audit/export.csv${qs ? `?${qs}` : ''}`;
}
