import { LocalTime } from '@/components/ui/time';
import { EventDetails } from './event-details';

interface EventRow {
  id: string;
  type: string;
  createdAt: string;
  data: Record<string, unknown>;
  actorNames?: Record<string, string>;
}

/** Events as a table: time (local, UTC on hover), type, and the details as fields with links. */
export function EventsTable({ events, tenantId }: { events: EventRow[]; tenantId: string }) {
  return (
    <div className="table-scroll">
      <table className="table">
        <thead>
          <tr>
            <th scope="col">Time</th>
            <th scope="col">Type</th>
            <th scope="col">Details</th>
          </tr>
        </thead>
        <tbody>
          {events.map((event) => (
            <tr key={event.id}>
              <td className="cell-time">
                <LocalTime iso={event.createdAt} />
              </td>
              <td>
                <code>{event.type}</code>
              </td>
              <td className="cell-wrap">
                <EventDetails data={event.data} tenantId={tenantId} actorNames={event.actorNames} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
