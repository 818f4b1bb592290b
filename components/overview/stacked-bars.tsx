import Link from 'next/link';
import { useId } from 'react';
import { useHydrated } from '@/lib/use-now';
import { hourLabel, seriesTotal, type ChartSeries, type OverviewRange } from '@/lib/overview-series';

const WIDTH = 720;
const HEIGHT = 160;

/**
 * A stacked bar chart per hour, drawn as SVG (docs/decisions/overview-charts.md). The drawing is hidden from
 * assistive technology: the same numbers are a table beside it (visually hidden, hours without any count left
 * out), and the legend names each part with its total and a link to the list it summarizes.
 */
export function StackedBars({
  title,
  hours,
  range,
  series,
  unit,
}: {
  title: string;
  hours: string[];
  range: OverviewRange;
  series: ChartSeries[];
  unit: string;
}) {
  const id = useId();
  const label = useHourLabel(range);
  const totals = hours.map((_, i) => series.reduce((sum, s) => sum + (s.counts[i] ?? 0), 0));
  const max = Math.max(1, ...totals);
  const slot = WIDTH / hours.length;
  const gap = hours.length > 48 ? 0.5 : 2;
  const ticks = hours.map((h, i) => ({ h, i })).filter(({ i }) => i % (range === '7d' ? 24 : 6) === 0);
  const rows = hours.map((h, i) => ({ h, i })).filter(({ i }) => totals[i]! > 0);
  return (
    <figure className="chart" aria-labelledby={`${id}-caption`}>
      <figcaption id={`${id}-caption`} className="chart-caption">
        {title}: {seriesTotal(totals)} {unit}
      </figcaption>
      <div className="chart-plot">
        <span className="chart-max" aria-hidden="true">
          {max}
        </span>
        <svg viewBox={`0 0 ${WIDTH} ${HEIGHT}`} preserveAspectRatio="none" aria-hidden="true" focusable="false" className="chart-svg">
          <line x1="0" x2={WIDTH} y1={HEIGHT - 0.5} y2={HEIGHT - 0.5} className="chart-axis" />
          <line x1="0" x2={WIDTH} y1={HEIGHT / 2} y2={HEIGHT / 2} className="chart-grid" />
          {hours.map((h, i) => {
            let y = HEIGHT;
            return (
              <g key={h}>
                <title>{`${label(h)}: ${series.map((s) => `${s.label} ${s.counts[i] ?? 0}`).join(', ')}`}</title>
                {series.map((s) => {
                  const value = s.counts[i] ?? 0;
                  if (!value) return null;
                  const height = (value / max) * HEIGHT;
                  y -= height;
                  return (
                    <rect
                      key={s.key}
                      x={i * slot + gap / 2}
                      y={y}
                      width={Math.max(slot - gap, 0.5)}
                      height={height}
                      className={`chart-bar ${s.tone}`}
                    />
                  );
                })}
              </g>
            );
          })}
        </svg>
      </div>
      <div className="chart-ticks" aria-hidden="true">
        {ticks.map(({ h, i }) => (
          <span key={h} style={{ left: `${(i / hours.length) * 100}%` }}>
            {label(h)}
          </span>
        ))}
      </div>
      <ul className="chart-legend">
        {series.map((s) => (
          <li key={s.key}>
            <span className={`chart-swatch ${s.tone}`} aria-hidden="true" />
            {s.href ? <Link href={s.href}>{s.label}</Link> : <span>{s.label}</span>}
            <span className="chart-legend-total">{seriesTotal(s.counts)}</span>
            {s.description && <span className="chart-legend-description">{s.description}</span>}
          </li>
        ))}
      </ul>
      <table className="visually-hidden">
        <caption>
          {title}, per hour{rows.length < hours.length ? ' (hours without any are left out)' : ''}
        </caption>
        <thead>
          <tr>
            <th scope="col">Hour</th>
            {series.map((s) => (
              <th key={s.key} scope="col">
                {s.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map(({ h, i }) => (
            <tr key={h}>
              <th scope="row">{label(h)}</th>
              {series.map((s) => (
                <td key={s.key}>{s.counts[i] ?? 0}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </figure>
  );
}

/**
 * An hour's label: local time in the browser's locale once hydrated; until then (the server's render, and
 * hydration meeting it) the UTC hour, which reads the same wherever the page is rendered.
 */
function useHourLabel(range: OverviewRange): (iso: string) => string {
  const isHydrated = useHydrated();
  return (iso) => (isHydrated ? hourLabel(iso, range) : `${range === '7d' ? `${iso.slice(5, 10)} ` : ''}${iso.slice(11, 16)} UTC`);
}
