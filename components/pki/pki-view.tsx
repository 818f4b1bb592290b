'use client';

import { useQuery } from '@tanstack/react-query';
import { PageHeader } from '@/components/console/page-header';
import { QueryStates } from '@/components/ui/query-state';
import { LocalTime, ShortHash } from '@/components/ui/time';
import type { Outputs } from '@/lib/api-types';
import { useTRPC } from '@/lib/trpc';
import { PKI_KEY_KIND_LABELS } from '@/protocol/api/pki-rotation-schemas';
import { RotationStepButton } from './rotation-step';
import './pki.css';

export type KeyStatus = Outputs['pki']['rotation']['status']['keys'][number];

const PHASE_TEXT: Record<KeyStatus['phase'], string> = {
  idle: 'In use, no rotation under way',
  prepared: 'Next key prepared: trusted, not yet in use',
  active: 'New key in use: the previous is still trusted',
};

const PHASE_CLASS: Record<KeyStatus['phase'], string> = { idle: 'status-live', prepared: 'status-pending', active: 'status-active' };

/** PKI: each of the five keys machines trust, its rotation phase, pins and readiness, and the next step (root admins). */
export function PkiView() {
  const trpc = useTRPC();
  const tenants = useQuery(trpc.tenants.list.queryOptions({}, { staleTime: 60_000 }));
  const isRootAdmin = tenants.data?.items.some((t) => t.isRoot && t.role === 'admin') ?? false;
  const status = useQuery({ ...trpc.pki.rotation.status.queryOptions(), enabled: isRootAdmin });
  if (tenants.isSuccess && !isRootAdmin) {
    return (
      <>
        <PageHeader title="PKI" />
        <div className="callout">You do not have access to the PKI: only admins of the root tenant see and rotate its keys.</div>
      </>
    );
  }
  return (
    <>
      <PageHeader
        title="PKI"
        description={
          <>
            The keys every joined machine trusts. Each rotates in three steps (prepare, activate, retire); machines receive the new trust
            set over their sessions, and each step waits until enough of them hold it.
            {status.data && <> Trust version {status.data.trustVersion}.</>}
          </>
        }
        actions={
          <button type="button" className="btn" onClick={() => void status.refetch()} disabled={status.isFetching}>
            {status.isFetching ? 'Refreshing…' : 'Refresh'}
          </button>
        }
      />
      <QueryStates query={status} items={status.data?.keys ?? []} loading="Loading the PKI…" what="the PKI" empty="No PKI yet.">
        {(keys) => keys.map((key) => <KeyPanel key={key.kind} status={key} />)}
      </QueryStates>
    </>
  );
}

function KeyPanel({ status }: { status: KeyStatus }) {
  const label = PKI_KEY_KIND_LABELS[status.kind];
  const headingId = `pki-${status.kind}`;
  const { trustVersion, nodesReady, nodesTotal } = status.readiness;
  return (
    <section className="panel pki-key" aria-labelledby={headingId} data-testid={`pki-key-${status.kind}`}>
      <header className="panel-header">
        <h2 id={headingId}>{label}</h2>
        <RotationStepButton status={status} />
      </header>
      <dl className="details panel-body">
        <dt>Phase</dt>
        <dd>
          <span className={`status ${PHASE_CLASS[status.phase]}`}>{status.phase}</span> {PHASE_TEXT[status.phase]}
        </dd>
        <dt>Since</dt>
        <dd>
          <LocalTime iso={status.since} />
        </dd>
        <dt>Pin in use</dt>
        <dd>
          <ShortHash value={status.currentPin} label={`${label} pin in use`} />
        </dd>
        {status.otherPin && (
          <>
            <dt>{status.phase === 'prepared' ? 'Next pin' : 'Previous pin'}</dt>
            <dd>
              <ShortHash value={status.otherPin} label={`${label} ${status.phase === 'prepared' ? 'next' : 'previous'} pin`} />
            </dd>
          </>
        )}
        <dt>Next step</dt>
        <dd>{status.nextStep}</dd>
        <dt>Readiness</dt>
        <dd data-testid={`pki-readiness-${status.kind}`}>
          {nodesReady} of {nodesTotal} nodes hold the trust set the next step needs{' '}
          <span className="muted">(trust version {trustVersion})</span>
        </dd>
        {status.liveCertificatesOfPrevious !== undefined && (
          <>
            <dt>Live certificates of the previous CA</dt>
            <dd>{status.liveCertificatesOfPrevious}</dd>
          </>
        )}
        {status.gatewaysOnPrevious !== undefined && (
          <>
            <dt>Gateways still on the previous CA</dt>
            <dd data-testid={`pki-gateways-on-previous-${status.kind}`}>
              {status.gatewaysOnPrevious} <span className="muted">(seen in the last minute)</span>
            </dd>
          </>
        )}
        {status.lastRetiredAt && (
          <>
            <dt>Last rotation finished</dt>
            <dd>
              <LocalTime iso={status.lastRetiredAt} />
            </dd>
          </>
        )}
      </dl>
    </section>
  );
}
