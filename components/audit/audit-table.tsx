'use client';

import { Fragment, useState } from 'react';
import { EventDetails } from '@/components/events/event-details';
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

const COLUMNS = 6;

/**
 * The audit log, one line per entry: the reason is cut to two lines (whole on hover and in the details), and
 * the details open below the row across the table's whole width, as labelled fields, so no value is squeezed
 * into a narrow column.
 */
export function AuditTable({ items, tenantId }: { items: AuditEntry[]; tenantId: string }) {
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) =>
    setOpen((current) => {
      const next = new Set(current);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  return (
    <table className="table audit-table">
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Actor</th>
          <th scope="col">Action</th>
          <th scope="col">Resource</th>
          <th scope="col">Reason</th>
          <th scope="col">Details</th>
        </tr>
      </thead>
      <tbody>
        {items.map((entry) => {
          const isOpen = open.has(entry.id);
          const fields = Object.keys(entry.data).length;
          const detailsId = `audit-details-${entry.id}`;
          return (
            <Fragment key={entry.id}>
              <tr className="audit-row" data-entry={entry.id}>
                <td className="cell-time">
                  <LocalTime iso={entry.createdAt} />
                </td>
                <td className="audit-cut" title={entry.actor}>
                  {entry.actorName ?? <code>{entry.actor}</code>}
                  {entry.actorEmail && entry.actorEmail !== entry.actorName && <span className="cell-sub">{entry.actorEmail}</span>}
                </td>
                <td>
                  <code>{entry.action}</code>
                </td>
                <td className="audit-cut" title={entry.resource}>
                  <code>{entry.resource}</code>
                </td>
                <td className="audit-reason-cell" title={entry.reason ?? undefined}>
                  {entry.reason ? <span className="audit-reason">{entry.reason}</span> : <span className="muted">none given</span>}
                </td>
                <td className="cell-actions">
                  {fields ? (
                    <button
                      type="button"
                      className="btn btn-small"
                      aria-expanded={isOpen}
                      aria-controls={detailsId}
                      onClick={() => toggle(entry.id)}
                    >
                      {isOpen ? 'Hide details' : `Show details (${fields})`}
                    </button>
                  ) : (
                    <span className="muted">no details</span>
                  )}
                </td>
              </tr>
              {isOpen && (
                <tr className="audit-details-row" id={detailsId}>
                  <td colSpan={COLUMNS}>
                    <section className="audit-details" aria-label={`Details of ${entry.action} on ${entry.resource}`}>
                      <EventDetails data={entry.data} tenantId={tenantId} actorNames={entry.actorNames} />
                    </section>
                  </td>
                </tr>
              )}
            </Fragment>
          );
        })}
      </tbody>
    </table>
  );
}
