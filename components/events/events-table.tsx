'use client';

import { DataTable, type DataColumn } from '@/components/ui/data-table';
import { useRowDetails } from '@/components/ui/row-details';
import { LocalTime } from '@/components/ui/time';
import { EventDetails, eventSummary } from './event-details';
import './events.css';

interface EventRow {
  id: string;
  type: string;
  createdAt: string;
  data: Record<string, unknown>;
  actorNames?: Record<string, string>;
}

/**
 * Events as a table, one line per event: time (local, UTC on hover), type, the data's values in short (cut to
 * one line, whole on hover), and a toggle that opens the data below the row across the table's whole width, as
 * labelled fields with links, so no value is squeezed into a narrow column.
 */
export function EventsTable({ events, tenantId }: { events: EventRow[]; tenantId: string }) {
  const details = useRowDetails<EventRow>({ idPrefix: 'event-details', className: 'event-details-row', none: 'none' });
  const columns: DataColumn<EventRow>[] = [
    { id: 'time', header: 'Time', className: 'cell-time', cell: (event) => <LocalTime iso={event.createdAt} /> },
    { id: 'type', header: 'Type', cell: (event) => <code>{event.type}</code> },
    {
      id: 'summary',
      header: 'Summary',
      className: 'event-summary-cell',
      title: (event) => eventSummary(event.data, event.actorNames) || undefined,
      cell: (event) => {
        const summary = eventSummary(event.data, event.actorNames);
        return summary ? <span className="event-summary">{summary}</span> : <span className="muted">no details</span>;
      },
    },
    details.column,
  ];
  return (
    <div className="table-scroll">
      <DataTable
        bare
        label="Events"
        className="events-table"
        rows={events}
        columns={columns}
        rowKey={(event) => event.id}
        rowClassName={() => 'event-row'}
        rowProps={(event) => ({ 'data-event': event.id })}
        afterRow={(event) =>
          details.detailsRow(
            event,
            columns.length,
            <section className="event-details" aria-label={`Details of ${event.type} at ${event.createdAt}`}>
              <EventDetails data={event.data} tenantId={tenantId} actorNames={event.actorNames} />
            </section>,
          )
        }
      />
    </div>
  );
}
