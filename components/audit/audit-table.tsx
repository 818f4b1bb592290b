'use client';

import { EventDetails } from '@/components/events/event-details';
import { DataTable, type DataColumn } from '@/components/ui/data-table';
import { useRowDetails } from '@/components/ui/row-details';
import { LocalTime } from '@/components/ui/time';

interface AuditEntry {
  id: string;
  actor: string;
  actorEmail: string | null;
  actorName: string | null;
  action: string;
  resource: string;
  reason: string | null;
  data: Record<string, unknown>;
  actorNames: Record<string, string>;
  createdAt: string;
}

/**
 * The audit log, one line per entry: the reason is cut to two lines (whole on hover and in the details), and
 * the details open below the row across the table's whole width, as labelled fields, so no value is squeezed
 * into a narrow column.
 */
export function AuditTable({ items, tenantId }: { items: AuditEntry[]; tenantId: string }) {
  const details = useRowDetails<AuditEntry>({ idPrefix: 'audit-details', className: 'audit-details-row', none: 'no details' });
  const columns: DataColumn<AuditEntry>[] = [
    { id: 'time', header: 'Time', className: 'cell-time', cell: (entry) => <LocalTime iso={entry.createdAt} /> },
    {
      id: 'actor',
      header: 'Actor',
      className: 'audit-cut',
      title: (entry) => entry.actor,
      cell: (entry) => (
        <>
          {entry.actorName ?? <code>{entry.actor}</code>}
          {entry.actorEmail && entry.actorEmail !== entry.actorName && <span className="cell-sub">{entry.actorEmail}</span>}
        </>
      ),
    },
    { id: 'action', header: 'Action', cell: (entry) => <code>{entry.action}</code> },
    {
      id: 'resource',
      header: 'Resource',
      className: 'audit-cut',
      title: (entry) => entry.resource,
      cell: (entry) => <code>{entry.resource}</code>,
    },
    {
      id: 'reason',
      header: 'Reason',
      className: 'audit-reason-cell',
      title: (entry) => entry.reason,
      cell: (entry) => (entry.reason ? <span className="audit-reason">{entry.reason}</span> : <span className="muted">none given</span>),
    },
    details.column,
  ];
  return (
    <DataTable
      bare
      label="Audit log"
      className="audit-table"
      rows={items}
      columns={columns}
      rowKey={(entry) => entry.id}
      rowClassName={() => 'audit-row'}
      rowProps={(entry) => ({ 'data-entry': entry.id })}
      afterRow={(entry) =>
        details.detailsRow(
          entry,
          columns.length,
          <section className="audit-details" aria-label={`Details of ${entry.action} on ${entry.resource}`}>
            <EventDetails data={entry.data} tenantId={tenantId} actorNames={entry.actorNames} />
          </section>,
        )
      }
    />
  );
}
