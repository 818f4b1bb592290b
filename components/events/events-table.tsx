'use client';

import { Fragment, useState } from 'react';
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

const COLUMNS = 4;

/**
 * Events as a table, one line per event: time (local, UTC on hover), type, the data's values in short (cut to
 * one line, whole on hover), and a toggle that opens the data below the row across the table's whole width, as
 * labelled fields with links, so no value is squeezed into a narrow column.
 */
export function EventsTable({ events, tenantId }: { events: EventRow[]; tenantId: string }) {
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) =>
    setOpen((current) => {
      const next = new Set(current);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  return (
    <div className="table-scroll">
      <table className="table events-table">
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Type</th>
            <th scope="col">Summary</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {events.map((event) => {
            const isOpen = open.has(event.id);
            const fields = Object.keys(event.data).length;
            const detailsId = `event-details-${event.id}`;
            const summary = eventSummary(event.data, event.actorNames);
            return (
              <Fragment key={event.id}>
                <tr className="event-row" data-event={event.id}>
                  <td className="cell-time">
                    <LocalTime iso={event.createdAt} />
                  </td>
                  <td>
                    <code>{event.type}</code>
                  </td>
                  <td className="event-summary-cell" title={summary || undefined}>
                    {summary ? <span className="event-summary">{summary}</span> : <span className="muted">no details</span>}
                  </td>
                  <td className="cell-actions">
                    {fields ? (
                      <button
                        type="button"
                        className="btn btn-small"
                        aria-expanded={isOpen}
                        aria-controls={detailsId}
                        onClick={() => toggle(event.id)}
                      >
                        {isOpen ? 'Hide details' : `Show details (${fields})`}
                      </button>
                    ) : (
                      <span className="muted">none</span>
                    )}
                  </td>
                </tr>
                {isOpen && (
                  <tr className="event-details-row" id={detailsId}>
                    <td colSpan={COLUMNS}>
                      <section className="event-details" aria-label={`Details of ${event.type} at ${event.createdAt}`}>
                        <EventDetails data={event.data} tenantId={tenantId} actorNames={event.actorNames} />
                      </section>
                    </td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
