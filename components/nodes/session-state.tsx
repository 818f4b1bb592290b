import { LocalTime } from '@/components/ui/time';
import { formatAge } from '@/lib/join-token-form';
import type { NodeSessionState } from '@/protocol/api/node-schemas';

/** Connected or disconnected, since when (local time, UTC on hover, and how long ago), for a list cell. */
export function SessionCell({ session, now }: { session: NodeSessionState; now: number }) {
  if (session.connected) {
    return (
      <>
        <span className="status status-connected">connected</span>
        <span className="cell-sub">
          since <LocalTime iso={session.since!} />
        </span>
        <span className="cell-sub">heartbeat {formatAge(session.lastHeartbeat!, now)}</span>
      </>
    );
  }
  return (
    <>
      <span className="status status-disconnected">disconnected</span>
      <span className="cell-sub">{session.since ? <>last seen {formatAge(session.since, now)}</> : 'never connected'}</span>
    </>
  );
}

/** The node page's session: the same facts, the gateway that holds it, and the trust set version the agent holds. */
export function SessionDetails({
  session,
  now,
  trust,
}: {
  session: NodeSessionState;
  now: number;
  trust: { version: number | null; at: string | null };
}) {
  return (
    <dl className="details panel-body">
      <dt>Session</dt>
      <dd>
        <span className={`status status-${session.connected ? 'connected' : 'disconnected'}`}>
          {session.connected ? 'connected' : 'disconnected'}
        </span>
      </dd>
      <dt>{session.connected ? 'Connected since' : 'Last seen'}</dt>
      <dd>
        {session.since ? (
          <>
            <LocalTime iso={session.since} /> ({formatAge(session.since, now)})
          </>
        ) : (
          <span className="muted">never connected</span>
        )}
      </dd>
      <dt>Last heartbeat</dt>
      <dd>
        {session.lastHeartbeat ? (
          <>
            <LocalTime iso={session.lastHeartbeat} /> ({formatAge(session.lastHeartbeat, now)})
          </>
        ) : (
          <span className="muted">none</span>
        )}
      </dd>
      <dt>Trust set</dt>
      <dd>
        {trust.version ? (
          <>
            version {trust.version}
            {trust.at && (
              <>
                {' '}
                (recorded <LocalTime iso={trust.at} />)
              </>
            )}
          </>
        ) : (
          <span className="muted">{trust.version === 0 ? 'none held' : 'not reported yet'}</span>
        )}
      </dd>
      <dt>Gateway</dt>
      <dd>{session.gatewayId ? <code>{session.gatewayId}</code> : <span className="muted">none</span>}</dd>
    </dl>
  );
}
