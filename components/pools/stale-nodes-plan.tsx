'use client';

import { useQuery } from '@tanstack/react-query';
import Link from 'next/link';
import type { Pool } from '@/lib/api-types';
import { withTenant } from '@/lib/tenant-url';
import { useTRPC } from '@/lib/trpc';
import { LocalTime } from '@/components/ui/time';
import { LoadingRows, QueryError } from '@/components/ui/query-state';
import { DataTable, type DataColumn } from '@/components/ui/data-table';

const ACTION_LABEL = { cordon: 'Cordon', retire: 'Retire' } as const;

type Step = NonNullable<ReturnType<typeof usePlan>['data']>['items'][number];

function usePlan(tenantId: string, poolId: string) {
  const trpc = useTRPC();
  return useQuery(trpc.pools.staleNodes.queryOptions({ tenantId, poolId }));
}

function staleColumns(tenantId: string): DataColumn<Step>[] {
  return [
    {
      id: 'step',
      header: 'Step',
      cell: (step) => (
        <span className={`badge ${step.action === 'retire' ? 'badge-warn' : 'badge-info'}`}>{ACTION_LABEL[step.action]}</span>
      ),
    },
    {
      id: 'node',
      header: 'Node',
      rowHeader: true,
      className: 'cell-name',
      cell: (step) => (
        <>
          <Link href={withTenant(`/nodes/${step.nodeId}`, tenantId)}>{step.hostname ?? step.nodeId}</Link>
          {step.hostname && <code className="id">{step.nodeId}</code>}
        </>
      ),
    },
    { id: 'since', header: 'Disconnected since', className: 'cell-time', cell: (step) => <LocalTime iso={step.disconnectedSince} /> },
    {
      id: 'cordoned',
      header: 'Cordoned by the policy',
      className: 'cell-time',
      cell: (step) => (step.staleCordonedAt ? <LocalTime iso={step.staleCordonedAt} /> : <span className="muted">not yet</span>),
    },
  ];
}

/** The dry run: what the pool's stale-node policy would do if it ran now (`pools.staleNodes`). Changes nothing. */
export function StaleNodesPlan({ pool, tenantId }: { pool: Pool; tenantId: string }) {
  const plan = usePlan(tenantId, pool.id);
  const headingId = `stale-plan-${pool.id}`;
  return (
    <section aria-labelledby={headingId} className="stale-plan">
      <h3 id={headingId}>What the policy would do now</h3>
      {plan.isPending ? (
        <LoadingRows label="Reading the dry run…" />
      ) : plan.isError ? (
        <QueryError error={plan.error} what="the dry run" onRetry={() => void plan.refetch()} />
      ) : !plan.data.policy ? (
        <p className="panel-empty">No stale-node policy: nothing is cordoned or retired for being disconnected.</p>
      ) : (
        <>
          <p role="status">
            Dry run at <LocalTime iso={plan.data.evaluatedAt} />: would retire <strong>{plan.data.counts.retire}</strong> and cordon{' '}
            <strong>{plan.data.counts.cordon}</strong> {plan.data.counts.retire + plan.data.counts.cordon === 1 ? 'node' : 'nodes'}.{' '}
            <button type="button" className="link-button" onClick={() => void plan.refetch()}>
              Refresh
            </button>
          </p>
          {plan.data.items.length === 0 ? (
            <p className="panel-empty">No node is due.</p>
          ) : (
            <DataTable
              rows={plan.data.items}
              columns={staleColumns(tenantId)}
              rowKey={(step) => step.nodeId}
              label={`Stale nodes of pool ${pool.name}`}
              caption={`Nodes the stale-node policy of pool ${pool.name} would act on now`}
              cards
            />
          )}
          {plan.data.items.length < plan.data.counts.retire + plan.data.counts.cordon && (
            <p className="field-hint">
              The first {plan.data.items.length} are listed; <code>better-compute pools stale-nodes {pool.id} --dry-run --limit 1000</code>{' '}
              lists more.
            </p>
          )}
        </>
      )}
    </section>
  );
}
