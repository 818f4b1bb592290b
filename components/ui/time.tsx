'use client';

import { useHydrated } from '@/lib/use-now';

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** `2026-12-01 03:04:05` in the browser's time zone, to the second. */
function formatLocalSeconds(date: Date): string {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/**
 * A moment in local time with seconds; the UTC value on hover, and in `dateTime` for machines. The server does
 * not know the browser's time zone: HTML it renders (and hydration) shows the UTC value until hydrated.
 */
export function LocalTime({ iso }: { iso: string }) {
  const isHydrated = useHydrated();
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return <>{iso}</>;
  const utc = date
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, ' UTC');
  return (
    <time dateTime={iso} title={utc}>
      {isHydrated ? formatLocalSeconds(date) : utc}
    </time>
  );
}

/** A long hash shortened to its first characters, the whole value on hover, with a button to copy it. */
export function ShortHash({ value, label }: { value: string | null | undefined; label: string }) {
  if (!value) return <span className="muted">none</span>;
  return (
    <span className="short-hash">
      <code title={value}>{value.slice(0, 12)}…</code>
      <button
        type="button"
        className="btn btn-small btn-quiet-neutral"
        aria-label={`Copy ${label} ${value}`}
        onClick={() => void navigator.clipboard?.writeText(value).catch(() => {})}
      >
        Copy
      </button>
    </span>
  );
}
