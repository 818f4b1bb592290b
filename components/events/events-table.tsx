'use client';

import { DataTable, type DataColumn } from '@/components/ui/data-table';
import { DetailsButton, DetailsRow, useOpenRows } from '@/components/ui/row-details';
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
  const { isOpen, toggle } = useOpenRows();
  const detailsId = (event: EventRow) => `event-details-${event.id}`;
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
    {
      id: 'details',
      header: 'Details',
      className: 'cell-actions',
      cell: (event) => (
        <DetailsButton
          fields={Object.keys(event.data).length}
          isOpen={isOpen(event.id)}
          controls={detailsId(event)}
          none="none"
          onToggle={() => toggle(event.id)}
        />
      ),
    },
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
          isOpen(event.id) && (
            <DetailsRow id={detailsId(event)} className="event-details-row" columns={columns.length}>
              <section className="event-details" aria-label={`Details of ${event.type} at ${event.createdAt}`}>
                <EventDetails data={event.data} tenantId={tenantId} actorNames={event.actorNames} />
              </section>
            </DetailsRow>
          )
        }
      />
    </div>
  );
}
