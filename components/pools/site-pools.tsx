import Link from 'next/link';
import type { Pool, Site } from '@/lib/api-types';
import type { PoolCounts } from '@/server/pools/counts';
import { withTenant } from '@/lib/tenant-url';
import { formatTimestamp } from '@/components/ui/format';
import { InstallScriptButton } from './install-script-button';
import { ArchivePoolButton } from './archive-pool-button';
import { SiteApprovalsButton } from './site-approvals-button';
import { StaleNodesButton } from './stale-nodes-button';
import { actionsColumn, nameColumn } from '@/components/ui/data-columns';
import { DataTable, type DataColumn } from '@/components/ui/data-table';

/** One site and its pools, as a table. */
interface SitePoolsProps {
  site: Site;
  pools: Pool[];
  tenantId: string;
  /** Live counts by pool id; a pool missing here has no node and no live token. */
  counts: Map<string, PoolCounts>;
  /** Whether the operator's role may archive pools; the archive control is left out otherwise. */
  canManage: boolean;
  /** Whether the operator's role may change the site's settings (admins). */
  canManageSite?: boolean;
}

export function SitePools({ site, pools, tenantId, counts, canManage, canManageSite = canManage }: SitePoolsProps) {
  const headingId = `site-${site.id}`;
  return (
    <section className="panel" aria-labelledby={headingId}>
      <header className="panel-header">
        <h2 id={headingId}>
          <span className="panel-eyebrow">Site </span>
          {site.name}
        </h2>
        <span className="badge">{site.kind}</span>
        {site.archivedAt && <span className="badge badge-muted">archived</span>}
        {site.requiredApprovals === 2 && <span className="badge">two-person approval</span>}
        {/* Off unless the site turns it on (sites update --tpm-enrollment on): then any TPM may wait in its queue. */}
        {site.tpm.enrollment && (
          <span className="badge" title="A TPM that is neither vendor-rooted nor listed may ask to join; it waits in the queue">
            TPM enrollment on
          </span>
        )}
        <code className="id" title="Site id">
          {site.id}
        </code>
        <span className="panel-meta">
          {pools.length} {pools.length === 1 ? 'pool' : 'pools'}
        </span>
        {canManageSite && !site.archivedAt && <SiteApprovalsButton site={site} tenantId={tenantId} />}
      </header>
      {pools.length === 0 ? (
        <p className="panel-empty">No pools in this site.</p>
      ) : (
        <DataTable
          rows={pools}
          columns={poolColumns(tenantId, counts, canManage)}
          rowKey={(pool) => pool.id}
          rowClassName={(pool) => (pool.archivedAt ? 'row-archived' : undefined)}
          label={`Pools of ${site.name}`}
          caption={`Pools in site ${site.name}`}
        />
      )}
    </section>
  );
}

function poolColumns(tenantId: string, counts: Map<string, PoolCounts>, canManage: boolean): DataColumn<Pool>[] {
  return [
    nameColumn('Name / ID', (pool) => (
      <>
        <span className="pool-name">{pool.name}</span>
        <code className="id">{pool.id}</code>
      </>
    )),
    {
      id: 'agent',
      header: 'Agent',
      cell: (pool) => <span className={`badge ${pool.agent === 'bcd' ? 'badge-info' : 'badge-muted'}`}>{pool.agent}</span>,
    },
    { id: 'policy', header: 'Policy', className: 'cell-wrap', cell: (pool) => <PolicyCell pool={pool} /> },
    {
      id: 'checks',
      header: 'Acceptance checks',
      className: 'cell-wrap',
      cell: (pool) => (pool.acceptanceChecks.length ? <TagList values={pool.acceptanceChecks} /> : <span className="muted">none</span>),
    },
    {
      id: 'nodes',
      header: 'Nodes',
      className: 'cell-wrap',
      cell: (pool) => (
        <>
          {/* The visible count starts the link's name, so speech input ("click 2 ready") finds it. */}
          <Link href={withTenant(`/nodes?pool=${pool.id}`, tenantId)}>
            <NodeCounts byState={counts.get(pool.id)?.nodesByState ?? {}} />
            <span className="visually-hidden"> (nodes of pool {pool.name})</span>
          </Link>
          <Link className="cell-sub" href={withTenant(`/nodes?pool=${pool.id}&connected=true`, tenantId)}>
            {counts.get(pool.id)?.connectedNodes ?? 0} connected
            <span className="visually-hidden"> (connected nodes of pool {pool.name})</span>
          </Link>
        </>
      ),
    },
    {
      id: 'tokens',
      header: 'Live tokens',
      className: 'cell-number',
      cell: (pool) =>
        pool.agent === 'bcd' ? (
          <>
            <Link href={withTenant(`/join-tokens?pool=${pool.id}`, tenantId)}>
              {counts.get(pool.id)?.liveTokens ?? 0} live
              <span className="visually-hidden"> (join tokens of pool {pool.name})</span>
            </Link>
            <Link className="cell-sub" href={withTenant(`/join-requests?pool=${pool.id}`, tenantId)}>
              {counts.get(pool.id)?.pendingRequests ?? 0} pending
              <span className="visually-hidden"> (join requests of pool {pool.name})</span>
            </Link>
          </>
        ) : (
          <span className="muted">no daemon</span>
        ),
    },
    {
      id: 'created',
      header: 'Created (UTC)',
      className: 'cell-time',
      cell: (pool) => (
        <time dateTime={pool.createdAt} title={pool.createdAt}>
          {formatTimestamp(pool.createdAt, { zone: false })}
        </time>
      ),
    },
    {
      id: 'status',
      header: 'Status',
      cell: (pool) =>
        pool.archivedAt ? (
          <span className="status status-archived" title={`Archived ${formatTimestamp(pool.archivedAt)}`}>
            Archived
          </span>
        ) : (
          <span className="status status-active">Active</span>
        ),
    },
    actionsColumn((pool) => (
      <>
        {pool.agent === 'bcd' && !pool.archivedAt && <InstallScriptButton pool={pool} tenantId={tenantId} />}
        <StaleNodesButton pool={pool} tenantId={tenantId} canManage={canManage} />
        {canManage && !pool.archivedAt && <ArchivePoolButton pool={pool} tenantId={tenantId} />}
      </>
    )),
  ];
}

function PolicyCell({ pool }: { pool: Pool }) {
  const attestors = pool.policy.joinAttestors;
  return (
    <div className="policy">
      {attestors?.length ? <TagList values={attestors} /> : <span className="muted">any attestor</span>}
      {pool.policy.kubernetes?.platformOperated === true && <span className="badge badge-warn">k8s platform-operated</span>}
      {pool.policy.staleNodes && (
        <span className="badge" title="Disconnected nodes are cordoned, then retired (stale-node policy)">
          stale: cordon {pool.policy.staleNodes.cordonAfterDays}d · retire +{pool.policy.staleNodes.retireAfterDays}d
        </span>
      )}
    </div>
  );
}

/** `2 ready · 1 adopting`, or `none`. */
function NodeCounts({ byState }: { byState: Record<string, number> }) {
  const entries = Object.entries(byState).sort(([a], [b]) => a.localeCompare(b));
  if (!entries.length) return <>no nodes</>;
  return <>{entries.map(([state, n]) => `${n} ${state}`).join(' · ')}</>;
}

function TagList({ values }: { values: readonly string[] }) {
  return (
    <ul className="tags">
      {values.map((value) => (
        <li key={value} className="tag">
          {value}
        </li>
      ))}
    </ul>
  );
}
