'use client';

import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { Picker } from '@/components/ui/picker';
import { PoolPicker } from '@/components/join-tokens/pool-picker';
import { BcdPoolStates, useBcdPool } from '@/components/join-tokens/bcd-pool-states';
import type { Tenant } from '@/lib/api-types';
import { QUEUE_FILTERS, QUEUE_PARAMS, queueFilterOf, toQueueFilter } from '@/lib/join-request-queue';
import { useHydrated } from '@/lib/use-now';
import { useUrlParams } from '@/lib/url-state';
import { PoolQueue } from './pool-queue';
import { QueueFilters } from './queue-filters';

export function JoinRequestsView() {
  return <TenantGate>{(tenant) => <TenantJoinRequests key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** The join requests of one pool's site (`?pool=`, else the first bcd pool), filtered by `?state=`. */
function TenantJoinRequests({ tenant }: { tenant: Tenant }) {
  const [params, setParams] = useUrlParams(QUEUE_PARAMS);
  // Requests are approved into a pool whose machines run the daemon; the others cannot take a join.
  const bcd = useBcdPool(tenant, params.pool);
  const { joinable: joinablePools, pool, siteNames } = bcd;
  const filter = toQueueFilter(params.state);
  const { filter: matching, ignored } = queueFilterOf(params);
  // The server renders the queue with its rows (the page's prefetch); its controls do nothing until the page's
  // scripts run, so they stay disabled until then rather than drop a click or a key.
  const isHydrated = useHydrated();

  return (
    <fieldset className="until-hydrated" disabled={!isHydrated}>
      <PageHeader
        title="Join requests"
        description={
          <>
            Machines the <code>discovery</code> or <code>tpm</code> attestor deferred to an operator: nothing is issued until one is
            approved. Tenant <strong>{tenant.name}</strong>.
          </>
        }
        actions={
          <>
            {joinablePools.length > 0 && (
              <PoolPicker
                pools={joinablePools}
                siteNames={siteNames}
                value={pool?.id ?? ''}
                onChange={(poolId) => setParams({ pool: poolId })}
              />
            )}
            <Picker label="State" value={filter} onChange={(state) => setParams({ state: state === 'pending' ? null : state })}>
              {QUEUE_FILTERS.map((state) => (
                <option key={state} value={state}>
                  {state}
                </option>
              ))}
            </Picker>
          </>
        }
      />
      <QueueFilters params={params} onChange={setParams} ignored={ignored} />
      <BcdPoolStates
        tenant={tenant}
        bcd={bcd}
        needsPool={(poolsLink) => <>A join request is approved into such a pool; create one on the {poolsLink} page first.</>}
      >
        {(pool) => (
          <PoolQueue
            key={`${pool.id}/${filter}/${JSON.stringify(matching)}`}
            tenant={tenant}
            pool={pool}
            sitePools={joinablePools.filter((p) => p.siteId === pool.siteId)}
            siteName={siteNames.get(pool.siteId) ?? pool.siteId}
            filter={filter}
            matching={matching}
            initialRequest={params.request}
          />
        )}
      </BcdPoolStates>
    </fieldset>
  );
}
