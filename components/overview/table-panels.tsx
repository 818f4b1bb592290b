import Link from 'next/link';
import type { ReactNode } from 'react';
import { DataTable, type DataColumn } from '@/components/ui/data-table';
import { formatSeconds, type Overview } from '@/lib/overview-series';

type PanelProps = { data: Overview; link: (path: string) => string };

interface TablePanelProps<T> {
  /** The heading's id (`ov-…`), which names the panel. */
  id: string;
  title: string;
  /** Said in place of the table when there is no row. */
  empty: string;
  rows: T[];
  columns: DataColumn<T>[];
  rowKey: (row: T) => string;
  /** The name of the table's scroll region (not a prefix of the panel's: the page finds panels by name). */
  label: string;
}

/** An overview panel holding one small table, or a line that says why it is empty. */
function TablePanel<T>({ id, title, empty, rows, ...table }: TablePanelProps<T>) {
  return (
    <section className="panel overview-panel" aria-labelledby={id}>
      <header className="panel-header overview-panel-header">
        <h2 id={id}>{title}</h2>
      </header>
      {rows.length === 0 ? (
        <p className="overview-body muted">{empty}</p>
      ) : (
        <DataTable rows={rows} className="overview-table" cards {...table} />
      )}
    </section>
  );
}

/** A number column, right-aligned (`num`), its cell's classes given per row where one stands out. */
function numberColumn<T>(id: string, header: string, cell: (row: T) => ReactNode, late?: (row: T) => boolean): DataColumn<T> {
  return { id, header, headerProps: { className: 'num' }, className: (row) => `num${late?.(row) ? ' overview-late' : ''}`, cell };
}

/** The row header: the site's or pool's name, a link to where its figures come from (when it has a pool). */
function nameColumn<T>(id: 'site' | 'pool', name: (row: T) => string, href: (row: T) => string | null): DataColumn<T> {
  const header = id === 'site' ? 'Site' : 'Pool';
  return {
    id,
    header,
    rowHeader: true,
    cell: (row) => {
      const to = href(row);
      return to ? <Link href={to}>{name(row)}</Link> : name(row);
    },
  };
}

/** A bar proportional to the value, beside the number (which is what assistive technology reads). */
function Bar({ percent }: { percent: number }) {
  return <span className="overview-bar" aria-hidden="true" style={{ width: `${percent}%` }} />;
}

type QueueRow = Overview['queue'][number];
type DecisionRow = Overview['decisions'][number];
type ExpiringRow = Overview['expiring'][number];
type ConnectedRow = Overview['connected'][number];

export function QueuePanel({ data, link }: PanelProps) {
  const max = Math.max(...data.queue.map((x) => x.pending), 1);
  return (
    <TablePanel<QueueRow>
      id="ov-queue"
      title="Join request queue"
      empty="This tenant has no sites."
      rows={data.queue}
      columns={[
        nameColumn(
          'site',
          (q) => q.siteName,
          (q) => (q.poolId ? link(`/join-requests?pool=${q.poolId}`) : null),
        ),
        numberColumn('pending', 'Pending', (q) => (
          <>
            <Bar percent={Math.round((q.pending / max) * 100)} />
            {q.pending}
          </>
        )),
        {
          id: 'oldest',
          header: 'Oldest waits',
          className: (q) => (q.oldestPendingSeconds !== null && q.oldestPendingSeconds > 3600 ? 'overview-late' : undefined),
          cell: (q) => (q.oldestPendingSeconds === null ? 'nothing waits' : formatSeconds(q.oldestPendingSeconds)),
        },
      ]}
      rowKey={(q) => q.siteId}
      label="Pending per site"
    />
  );
}

export function DecisionsPanel({ data, link }: PanelProps) {
  return (
    <TablePanel<DecisionRow>
      id="ov-decisions"
      title="Time to decision, last 7 days"
      empty="No join request was decided in the last 7 days."
      rows={data.decisions}
      columns={[
        nameColumn(
          'site',
          (d) => d.siteName,
          (d) => (d.poolId ? link(`/join-requests?pool=${d.poolId}&state=all`) : null),
        ),
        numberColumn('decided', 'Decided', (d) => d.decided),
        { id: 'median', header: 'Median', cell: (d) => formatSeconds(d.medianSeconds) },
        { id: 'p90', header: '90th percentile', cell: (d) => formatSeconds(d.p90Seconds) },
      ]}
      rowKey={(d) => d.siteId}
      label="Decisions per site"
    />
  );
}

export function ExpiringPanel({ data, link }: PanelProps) {
  return (
    <TablePanel<ExpiringRow>
      id="ov-expiring"
      title="Certificates expiring"
      empty="No node of this tenant holds a valid certificate."
      rows={data.expiring}
      columns={[
        nameColumn(
          'pool',
          (e) => e.poolName,
          (e) => link(`/nodes?pool=${e.poolId}`),
        ),
        numberColumn(
          '1h',
          'Within 1 h',
          (e) => e.within1h,
          (e) => e.within1h > 0,
        ),
        numberColumn('6h', '6 h', (e) => e.within6h),
        numberColumn('24h', '24 h', (e) => e.within24h),
      ]}
      rowKey={(e) => e.poolId}
      label="Expiring per pool"
    />
  );
}

/**
 * Connected nodes per pool: how many of the pool's nodes (not retired) hold a live session, out of how many.
 * The bar is decoration beside the numbers, which are what assistive technology reads.
 */
export function ConnectedPanel({ data, link }: PanelProps) {
  return (
    <TablePanel<ConnectedRow>
      id="ov-connected"
      title="Connected nodes"
      empty="No pool of this tenant has nodes."
      rows={data.connected}
      columns={[
        nameColumn(
          'pool',
          (c) => c.poolName,
          (c) => link(`/nodes?pool=${c.poolId}&connected=true`),
        ),
        numberColumn('connected', 'Connected', (c) => (
          <>
            <Bar percent={c.total ? Math.round((c.connected / c.total) * 100) : 0} />
            {c.connected}
          </>
        )),
        numberColumn('of', 'Of', (c) => (
          <Link href={link(`/nodes?pool=${c.poolId}`)} aria-label={`All ${c.total} nodes of ${c.poolName}`}>
            {c.total}
          </Link>
        )),
      ]}
      rowKey={(c) => c.poolId}
      label="Sessions per pool"
    />
  );
}
