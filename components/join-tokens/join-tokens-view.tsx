'use client';

import { usePathname, useRouter, useSearchParams } from 'next/navigation';
import { useRef, useState } from 'react';
import { PageHeader } from '@/components/console/page-header';
import { TenantGate } from '@/components/console/tenant-gate';
import { BcdPoolStates, useBcdPool } from './bcd-pool-states';
import type { Tenant } from '@/lib/api-types';
import type { JoinToken } from '@/lib/join-token-form';
import { can } from '@/lib/can';
import { CreateJoinTokenDialog } from './create-join-token-dialog';
import { JoinTokenTable } from './join-token-table';
import { OneTimeToken, type MintedToken } from './one-time-token';
import { PoolPicker } from './pool-picker';
import { Toggle } from '@/components/ui/notice';

const POOL_PARAM = 'pool';

export function JoinTokensView() {
  return <TenantGate>{(tenant) => <TenantJoinTokens key={tenant.id} tenant={tenant} />}</TenantGate>;
}

/** The join tokens of one of the tenant's bcd pools (`?pool=`, else the first), with create and revoke. */
function TenantJoinTokens({ tenant }: { tenant: Tenant }) {
  const router = useRouter();
  const pathname = usePathname();
  const searchParams = useSearchParams();
  const [showInactive, setShowInactive] = useState(false);
  const [isCreating, setCreating] = useState(false);
  // The one place the bearer token lives in the browser: React state of this page, until Done.
  const [minted, setMinted] = useState<MintedToken | null>(null);
  const createButton = useRef<HTMLButtonElement>(null);

  const requestedPoolId = searchParams.get(POOL_PARAM);
  // Only the daemon joins with a token (joinTokens.create refuses agent 'none' and archived pools).
  const bcd = useBcdPool(tenant, requestedPoolId);
  const { joinable: joinablePools, pool, siteNames } = bcd;

  function selectPool(poolId: string) {
    const params = new URLSearchParams(searchParams.toString());
    params.set(POOL_PARAM, poolId);
    router.replace(`${pathname}?${params.toString()}`, { scroll: false });
  }

  function onCreated(record: JoinToken, token: string | null, poolName: string) {
    setCreating(false);
    // A late replay of the same submit answers without the token; it must not hide the one being shown.
    setMinted((current) => (current?.record.id === record.id && current.token && !token ? current : { record, token, poolName }));
  }

  return (
    <>
      <PageHeader
        title="Join tokens"
        description={
          <>
            A join token lets a limited number of machines join one pool, for a limited time. Tenant <strong>{tenant.name}</strong>.
          </>
        }
        actions={
          <>
            {joinablePools.length > 0 && (
              <PoolPicker pools={joinablePools} siteNames={siteNames} value={pool?.id ?? ''} onChange={selectPool} />
            )}
            <Toggle label="Show inactive" checked={showInactive} onChange={setShowInactive} />
            {can(tenant, 'compute:join-tokens:create') && (
              <button ref={createButton} type="button" className="btn btn-primary" disabled={!pool} onClick={() => setCreating(true)}>
                Create join token
              </button>
            )}
          </>
        }
      />
      {/* Before the panel: closing the dialog returns the focus to its opener, then the new panel takes it. */}
      {pool && (
        <CreateJoinTokenDialog
          open={isCreating}
          tenant={tenant}
          pool={pool}
          onClose={() => setCreating(false)}
          onCreated={(record, token) => onCreated(record, token, pool.name)}
        />
      )}
      {minted && (
        <OneTimeToken
          minted={minted}
          onDone={() => {
            setMinted(null);
            // The panel that held the focus is gone; put it back where the next token starts.
            createButton.current?.focus();
          }}
        />
      )}
      <BcdPoolStates
        tenant={tenant}
        bcd={bcd}
        needsPool={(poolsLink) => (
          <>
            Join tokens admit the Better Compute daemon into a pool; create a pool with agent <code>bcd</code> on the {poolsLink} page
            first.
          </>
        )}
      >
        {(pool) => (
          <JoinTokenTable
            key={pool.id}
            tenant={tenant}
            pool={pool}
            siteName={siteNames.get(pool.siteId) ?? pool.siteId}
            includeInactive={showInactive}
          />
        )}
      </BcdPoolStates>
    </>
  );
}
