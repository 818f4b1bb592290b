import type { Overview } from './api-types';
import { explainRefusal } from './refusal-reasons';

export type { Overview };

export type OverviewRange = Overview['range'];

/** What the joins chart stacks: the three outcomes, the attestors of admitted and pending joins, or refusal reasons. */
export type StackMode = 'outcome' | 'attestor' | 'reason';

export interface ChartSeries {
  key: string;
  label: string;
  counts: number[];
  /** A CSS class of the series' colour (overview.css: one palette per theme). */
  tone: string;
  /** The list this part summarizes, when there is one. */
  href?: string;
  /** What the part is, in words, beside its label in the legend (a refusal reason's meaning). */
  description?: string;
}

const MAX_PARTS = 6;
const total = (counts: number[]) => counts.reduce((a, b) => a + b, 0);
const add = (a: number[], b: number[]) => a.map((v, i) => v + (b[i] ?? 0));
const zeros = (n: number) => new Array<number>(n).fill(0);

/** Parts beyond the sixth largest fold into "other", so a chart keeps a legend one can read. */
function foldParts(
  parts: Array<{ key: string; counts: number[] }>,
  width: number,
  href: (key: string) => string | undefined,
  describe: (key: string) => string | undefined = () => undefined,
): ChartSeries[] {
  const sorted = [...parts].sort((a, b) => total(b.counts) - total(a.counts) || a.key.localeCompare(b.key));
  const kept: ChartSeries[] = sorted.slice(0, MAX_PARTS).map((p, i) => ({
    key: p.key,
    label: p.key || 'unknown',
    counts: p.counts,
    tone: `tone-${i}`,
    href: href(p.key),
    description: describe(p.key),
  }));
  const rest = sorted.slice(MAX_PARTS);
  if (rest.length)
    kept.push({
      key: 'other',
      label: `${rest.length} other`,
      counts: rest.reduce((acc, p) => add(acc, p.counts), zeros(width)),
      tone: 'tone-other',
      href: undefined,
    });
  return kept;
}

/** The series of the joins chart in `mode`; `refusedHref` links a reason to the refused-joins list. */
export function joinSeries(o: Overview, mode: StackMode, refusedHref: (reason?: string) => string): ChartSeries[] {
  const width = o.hours.length;
  const sum = (parts: Array<{ counts: number[] }>) => parts.reduce((acc, p) => add(acc, p.counts), zeros(width));
  if (mode === 'outcome') {
    return [
      { key: 'admitted', label: 'Admitted', counts: sum(o.joins.admitted), tone: 'tone-admitted' },
      { key: 'pending', label: 'Pending', counts: sum(o.joins.pending), tone: 'tone-pending' },
      { key: 'refused', label: 'Refused', counts: sum(o.joins.refused), tone: 'tone-refused', href: refusedHref() },
    ];
  }
  if (mode === 'attestor') {
    const byAttestor = new Map<string, number[]>();
    for (const part of [...o.joins.admitted, ...o.joins.pending])
      byAttestor.set(part.key, add(byAttestor.get(part.key) ?? zeros(width), part.counts));
    return foldParts(
      [...byAttestor].map(([key, counts]) => ({ key, counts })),
      width,
      () => undefined,
    );
  }
  // Each reason in words: the refused-joins page's explanation of it.
  return foldParts(
    o.joins.refused,
    width,
    (reason) => refusedHref(reason),
    (reason) => explainRefusal(reason).meaning,
  );
}

/** Renewals and refused renewals per hour. */
export function renewalSeries(o: Overview): ChartSeries[] {
  const refused = o.renewals.refused.reduce((acc, p) => add(acc, p.counts), zeros(o.hours.length));
  return [
    { key: 'renewed', label: 'Renewed', counts: o.renewals.renewed, tone: 'tone-admitted' },
    { key: 'refused', label: 'Refused', counts: refused, tone: 'tone-refused' },
  ];
}

/** A duration in words: "45 s", "12 min", "3 h 20 min", "2 d 4 h". */
export function formatSeconds(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return m % 60 ? `${h} h ${m % 60} min` : `${h} h`;
  const d = Math.floor(h / 24);
  return h % 24 ? `${d} d ${h % 24} h` : `${d} d`;
}

/** The local hour an ISO hour start names: "14:00", with the weekday over a week ("Tue 14:00"). */
export function hourLabel(iso: string, range: OverviewRange): string {
  const date = new Date(iso);
  const time = date.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  return range === '7d' ? `${date.toLocaleDateString(undefined, { weekday: 'short' })} ${time}` : time;
}

export const seriesTotal = total;
